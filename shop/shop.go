// Package shop is the shopper's page, served by the API at "/": the sales
// not yet ended with a countdown and remaining stock, a buy button (and a
// reserved sale's or a draw's registration, a draw's commitment, seed and
// result), the order's status by polling, cancel, and (in `seckill dev`
// only) sign-in as any user and payment through the sandbox provider. It
// is four embedded files of plain JavaScript, HTML and CSS with no build
// step, so that it stays up under a sale's load: the page is static and
// cacheable, and all it asks of the API is the session list, the order
// status and the buy (and, once per sale that takes registrations and
// sign-in, the shopper's registration; in a draw again once drawn, and
// every few seconds while waitlisted).
package shop

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"
)

//go:embed static
var static embed.FS

// Cache policies. The index names each asset by its content hash, so an
// asset under its hashed name never changes and caches for a year; the
// index itself (and an asset under its plain name) is revalidated on every
// load with its ETag, which costs a 304 and picks up a deploy at once.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// securityHeaders go on the page: it holds a bearer token in localStorage,
// so it runs no script but its own and cannot be framed.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
		"img-src 'self' data:; media-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
}

// Options tune the page.
type Options struct {
	// Dev shows the dev-only helpers: sign in as user N and pay through
	// the sandbox. The API must mount the matching /dev/v1 endpoints.
	Dev bool
}

type asset struct {
	body  []byte
	ctype string
	etag  string
	cache string
}

// Shop serves the page.
type Shop struct {
	index  asset
	assets map[string]asset // by plain and by hashed name
}

// contentTypes of the embedded files, by extension.
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// New renders the page once; serving it costs no templating.
func New(o Options) (*Shop, error) {
	s := &Shop{assets: map[string]asset{}}
	urls := map[string]string{}
	for _, name := range []string{"clock.js", "app.js", "style.css"} {
		body, err := static.ReadFile("static/" + name)
		if err != nil {
			return nil, err
		}
		ext := path.Ext(name)
		sum := sha256.Sum256(body)
		h := hex.EncodeToString(sum[:])[:12]
		hashed := strings.TrimSuffix(name, ext) + "." + h + ext
		etag := `"` + h + `"`
		s.assets[name] = asset{body: body, ctype: contentTypes[ext], etag: etag, cache: cacheRevalidate}
		s.assets[hashed] = asset{body: body, ctype: contentTypes[ext], etag: etag, cache: cacheImmutable}
		urls[name] = "/shop/" + hashed
	}
	tmpl, err := template.ParseFS(static, "static/index.html")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, struct {
		ClockJS, AppJS, StyleCSS string
		Dev                      bool
	}{urls["clock.js"], urls["app.js"], urls["style.css"], o.Dev}); err != nil {
		return nil, fmt.Errorf("shop: render index: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	s.index = asset{body: buf.Bytes(), ctype: fiber.MIMETextHTMLCharsetUTF8,
		etag: `"` + hex.EncodeToString(sum[:])[:12] + `"`, cache: cacheRevalidate}
	return s, nil
}

// Mount registers GET / (the page) and GET /shop/{asset} on r. An unknown
// asset falls through to r's next handler (the API's JSON 404).
func (s *Shop) Mount(r fiber.Router) {
	r.Get("/", func(c *fiber.Ctx) error {
		for k, v := range securityHeaders {
			c.Set(k, v)
		}
		return serve(c, s.index)
	})
	r.Get("/shop/:name", func(c *fiber.Ctx) error {
		a, ok := s.assets[c.Params("name")]
		if !ok {
			return c.Next()
		}
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		return serve(c, a)
	})
}

// serve answers with a, or 304 when the client's copy is current.
func serve(c *fiber.Ctx, a asset) error {
	c.Set(fiber.HeaderCacheControl, a.cache)
	c.Set(fiber.HeaderETag, a.etag)
	c.Set(fiber.HeaderContentType, a.ctype)
	if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" && etagMatch(inm, a.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	return c.Send(a.body)
}

// etagMatch reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for GET).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
