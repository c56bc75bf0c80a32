package shop_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
)

// The shop page's code is checked against the API's OpenAPI document
// (api/openapi.yaml): every call the page makes is a documented operation
// (its method and path, each path worked out from the expressions that
// build it), and every field it reads from an answer (a snake_case member,
// or any member of an answer's data) is a property of the document's
// schemas. A page that calls a route or reads a field the API does not
// document fails here, before a browser ever runs it.
func TestPageCallsTheDocumentedAPI(t *testing.T) {
	raw, err := os.ReadFile("static/app.js")
	require.NoError(t, err)
	src := string(raw)
	docJSON, err := api.OpenAPI()
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(docJSON, &doc))

	type call struct{ method, path string }
	var calls []call
	for _, m := range regexp.MustCompile(`\bcall\("([A-Z]+)",\s*`).FindAllStringSubmatchIndex(src, -1) {
		method := src[m[2]:m[3]]
		for _, p := range jsPaths(src, m[1], jsExpr(src, m[1])) {
			calls = append(calls, call{method, p})
		}
	}
	for _, m := range regexp.MustCompile(`\bfetch\("([^"]+)"`).FindAllStringSubmatch(src, -1) {
		calls = append(calls, call{"GET", m[1]})
	}
	seen := map[string]bool{}
	for _, c := range calls {
		op := documented(doc.Paths, c.method, c.path)
		require.NotEmpty(t, op, "the shop page calls %s %s, which api/openapi.yaml does not document", c.method, c.path)
		seen[c.method+" "+op] = true
	}
	for _, want := range []string{"GET /api/v1/sessions", "GET /api/v1/sessions/{id}", "POST /api/v1/sessions/{id}/orders",
		"GET /api/v1/orders", "GET /api/v1/orders/{order_no}", "POST /api/v1/orders/{order_no}/cancel",
		"POST /api/v1/orders/{order_no}/payment", "POST /api/v1/sessions/{id}/ticket", "POST /api/v1/sessions/{id}/captcha",
		"POST /api/v1/sessions/{id}/registrations", "GET /api/v1/sessions/{id}/registration", "GET /api/v1/device",
		"POST /dev/v1/token"} {
		require.True(t, seen[want], "the check found the page's call %s (%v)", want, seen)
	}

	props := map[string]bool{}
	var whole any
	require.NoError(t, json.Unmarshal(docJSON, &whole))
	collectProperties(whole, props)
	read := regexp.MustCompile(`\.([a-z]+(?:_[a-z]+)+)\b|\bdata\.([a-z_]+)`)
	fields := 0
	for _, m := range read.FindAllStringSubmatch(src, -1) {
		name := m[1] + m[2]
		require.True(t, props[name], "the shop page reads %q, which no schema of api/openapi.yaml has", name)
		fields++
	}
	require.Greater(t, fields, 40)
}

// documented is the document's path of the operation method path is
// ("" for none): "{}" in path is a parameter's value.
func documented(paths map[string]map[string]any, method, path string) string {
	segs := strings.Split(path, "/")
	for tmpl, item := range paths {
		if item[strings.ToLower(method)] == nil {
			continue
		}
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		match := true
		for i := range ts {
			param := strings.HasPrefix(ts[i], "{")
			if (segs[i] == "{}") != param || (!param && segs[i] != ts[i]) {
				match = false
				break
			}
		}
		if match {
			return tmpl
		}
	}
	return ""
}

// collectProperties adds the names of every schema property under v.
func collectProperties(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if p, ok := x["properties"].(map[string]any); ok {
			for name := range p {
				into[name] = true
			}
		}
		for _, e := range x {
			collectProperties(e, into)
		}
	case []any:
		for _, e := range x {
			collectProperties(e, into)
		}
	}
}

// jsExpr is the JavaScript expression at src[i:], up to the first ",", ")"
// or ";" outside brackets and strings.
func jsExpr(src string, i int) string {
	end := len(src)
	if j := topLevel(src[i:], ",);"); j >= 0 {
		end = i + j
	}
	return strings.TrimSpace(src[i:end])
}

// splitTop splits expr at sep outside brackets and strings.
func splitTop(expr string, sep byte) []string {
	var out []string
	for {
		j := topLevel(expr, string(sep))
		if j < 0 {
			return append(out, expr)
		}
		out = append(out, expr[:j])
		expr = expr[j+1:]
	}
}

// topLevel is the index of the first byte of expr that is one of stops
// outside brackets and strings (a closing bracket that closes nothing
// counts as outside), -1 when there is none.
func topLevel(expr, stops string) int {
	depth, quote := 0, byte(0)
	for j := 0; j < len(expr); j++ {
		c := expr[j]
		switch {
		case quote != 0:
			if c == '\\' {
				j++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case depth == 0 && strings.IndexByte(stops, c) >= 0:
			return j
		case c == '(' || c == '[' || c == '{':
			depth++
		case depth > 0 && (c == ')' || c == ']' || c == '}'):
			depth--
		}
	}
	return -1
}

var (
	jsIdent = regexp.MustCompile(`^\w+$`)
	jsCall  = regexp.MustCompile(`^(\w+)\(`)
)

// jsPaths are the API paths expr (at offset at of src) builds: its string
// literals, "{}" for each other part, the query left out. An identifier is
// its nearest var before at, or the argument its function is called with;
// a call is its function's return.
func jsPaths(src string, at int, expr string) []string {
	if alt := splitTop(expr, '?'); len(alt) == 2 {
		var out []string
		for _, branch := range splitTop(alt[1], ':') {
			out = append(out, jsPaths(src, at, strings.TrimSpace(branch))...)
		}
		return out
	}
	parts := splitTop(expr, '+')
	if len(parts) == 1 {
		if jsIdent.MatchString(expr) {
			return identPaths(src, at, expr)
		}
		if m := jsCall.FindStringSubmatch(expr); m != nil {
			def := regexp.MustCompile(`function ` + m[1] + `\([^)]*\)\s*\{\s*return `).FindStringIndex(src)
			if def == nil {
				return []string{expr}
			}
			return jsPaths(src, def[1], jsExpr(src, def[1]))
		}
	}
	var b strings.Builder
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if s, err := strconv.Unquote(p); err == nil && strings.HasPrefix(p, `"`) {
			b.WriteString(s)
		} else {
			b.WriteString("{}")
		}
	}
	path, _, _ := strings.Cut(b.String(), "?")
	return []string{path}
}

// identPaths resolves the identifier name used at offset at.
func identPaths(src string, at int, name string) []string {
	before := src[:at]
	varAt := -1
	if all := regexp.MustCompile(`\bvar `+name+` = `).FindAllStringIndex(before, -1); all != nil {
		varAt = all[len(all)-1][1]
	}
	fn := regexp.MustCompile(`function (\w+)\(([^)]*)\)`).FindAllStringSubmatchIndex(before, -1)
	if len(fn) > 0 && fn[len(fn)-1][0] > varAt {
		f := fn[len(fn)-1]
		fname := before[f[2]:f[3]]
		params := strings.Split(before[f[4]:f[5]], ",")
		for k, p := range params {
			if strings.TrimSpace(p) != name {
				continue
			}
			var out []string
			for _, c := range regexp.MustCompile(`\b`+fname+`\(`).FindAllStringIndex(src, -1) {
				if strings.HasSuffix(src[:c[0]], "function ") {
					continue
				}
				args := splitTop(jsCallArgs(src, c[1]), ',')
				out = append(out, jsPaths(src, c[1], strings.TrimSpace(args[k]))...)
			}
			return out
		}
	}
	if varAt < 0 {
		return []string{name}
	}
	return jsPaths(src, varAt, jsExpr(src, varAt))
}

// jsCallArgs are the arguments of the call whose "(" ends at src[i-1].
func jsCallArgs(src string, i int) string {
	depth := 1
	for j := i; j < len(src); j++ {
		switch src[j] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return src[i:j]
			}
		}
	}
	return src[i:]
}
