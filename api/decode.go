package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// decodeStrict decodes a JSON object body into v: unknown fields, wrong
// types, trailing data and non-objects are INVALID_ARGUMENT naming the
// problem. An empty body leaves v as it is when allowEmpty.
func decodeStrict(body []byte, v any, allowEmpty bool) error {
	switch trimmed := bytes.TrimSpace(body); {
	case len(trimmed) == 0 && allowEmpty:
		return nil
	case len(trimmed) == 0:
		return seckill.Errorf(seckill.EINVALID, "request body is required")
	case trimmed[0] != '{': // null too, which encoding/json takes as "leave v as it is"
		return seckill.Errorf(seckill.EINVALID, "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			return seckill.Errorf(seckill.EINVALID, "request body has data after the JSON object")
		}
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var timeErr *time.ParseError
	switch {
	case errors.As(err, &timeErr):
		return seckill.Errorf(seckill.EINVALID, "field %q must be an RFC 3339 time", fieldOf(body, timeErr.Value))
	case strings.HasPrefix(err.Error(), "Time.UnmarshalJSON: "):
		return seckill.Errorf(seckill.EINVALID, "a time must be an RFC 3339 string (2026-01-02T15:04:05Z)")
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return seckill.Errorf(seckill.EINVALID, "field %q must be %s", typeErr.Field, kindName(typeErr.Type.Kind().String()))
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return seckill.Errorf(seckill.EINVALID, "request body is not valid JSON")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return seckill.Errorf(seckill.EINVALID, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return seckill.Errorf(seckill.EINVALID, "request body is invalid: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

// fieldOf names the field of a JSON object whose value is the string v:
// encoding/json does not say which field a time failed to parse in.
func fieldOf(body []byte, v string) string {
	var fields map[string]any
	_ = json.Unmarshal(body, &fields)
	for name, got := range fields {
		if got == v {
			return name
		}
	}
	return "time"
}

func kindName(k string) string {
	switch k {
	case "int", "int64", "int32":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "struct":
		return "an RFC 3339 time"
	default:
		return "a " + k
	}
}

// pathID parses a positive integer path parameter.
func pathID(c *fiber.Ctx, name string) (int64, error) {
	raw := c.Params(name)
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, seckill.Errorf(seckill.EINVALID, "%s must be a positive integer, got %q", name, raw)
	}
	return id, nil
}

// query lets a request through when its query names only the route's
// parameters, each once: a misspelt filter (?user=42 for ?user_id=42)
// would otherwise be ignored, and the list of every order taken for the
// shopper's.
func query(names ...string) fiber.Handler {
	return func(c *fiber.Ctx) (err error) {
		seen := make(map[string]bool, len(names))
		c.Context().QueryArgs().VisitAll(func(k, _ []byte) {
			switch name := string(k); {
			case err != nil:
			case !slices.Contains(names, name):
				err = seckill.Errorf(seckill.EINVALID, "unknown query parameter %q: this route takes %s", name, strings.Join(names, ", "))
			case seen[name]:
				err = seckill.Errorf(seckill.EINVALID, "query parameter %q is given twice", name)
			default:
				seen[name] = true
			}
		})
		if err != nil {
			return err
		}
		return c.Next()
	}
}
