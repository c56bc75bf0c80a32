package shop_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/shop"
)

func app(t *testing.T, o shop.Options) *fiber.App {
	t.Helper()
	s, err := shop.New(o)
	require.NoError(t, err)
	a := fiber.New()
	s.Mount(a)
	a.Use(func(c *fiber.Ctx) error { return c.SendStatus(http.StatusNotFound) })
	return a
}

func get(t *testing.T, a *fiber.App, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := a.Test(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// The page revalidates (a deploy shows at once, a reload costs a 304);
// assets under their hashed names cache for a year; every answer has the
// right content type.
func TestCachingAndContentTypes(t *testing.T) {
	a := app(t, shop.Options{})
	resp, page := get(t, a, "/")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)
	require.Contains(t, page, `data-dev="false"`)
	require.NotContains(t, page, "dev-signin")

	resp, body := get(t, a, "/", "If-None-Match", etag)
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
	require.Empty(t, body)
	resp, _ = get(t, a, "/", "If-None-Match", `W/"other", `+etag)
	require.Equal(t, http.StatusNotModified, resp.StatusCode)

	for ext, ctype := range map[string]string{"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"} {
		m := regexp.MustCompile(`"(/shop/(\w+)\.[0-9a-f]{12}\.` + ext + `)"`).FindStringSubmatch(page)
		require.NotNil(t, m, "the page links a hashed .%s", ext)
		resp, hashed := get(t, a, m[1])
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, ctype, resp.Header.Get("Content-Type"))
		require.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"))
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
		require.NotEmpty(t, hashed)

		resp, plain := get(t, a, "/shop/"+m[2]+"."+ext)
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
		require.Equal(t, hashed, plain)
		resp, _ = get(t, a, m[1], "If-None-Match", resp.Header.Get("ETag"))
		require.Equal(t, http.StatusNotModified, resp.StatusCode)
	}
	resp, _ = get(t, a, "/shop/nope.js")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// Dev mode shows the dev sign-in; the page then differs, and so does its ETag.
func TestDevPage(t *testing.T) {
	respProd, _ := get(t, app(t, shop.Options{}), "/")
	resp, page := get(t, app(t, shop.Options{Dev: true}), "/")
	require.Contains(t, page, `data-dev="true"`)
	require.Contains(t, page, `id="dev-signin"`)
	require.NotEqual(t, respProd.Header.Get("ETag"), resp.Header.Get("ETag"))
	require.False(t, strings.Contains(page, "http://") || strings.Contains(page, "https://"), "no third-party URL")
}

// Every code of the error vocabulary (error.go) has a shopper-facing
// message on the page, and every status a status hint.
func TestEveryErrorCodeHasAMessage(t *testing.T) {
	js, err := os.ReadFile("static/app.js")
	require.NoError(t, err)
	vocabulary, err := os.ReadFile("../error.go")
	require.NoError(t, err)
	codes := regexp.MustCompile(`(?m)^\s+E[A-Z]+\s+= "([A-Z_]+)"`).FindAllStringSubmatch(string(vocabulary), -1)
	require.NotEmpty(t, codes)
	for _, c := range codes {
		require.Regexp(t, `(?m)^\s+`+c[1]+`: "`, string(js), "no message for error code %s in app.js", c[1])
	}
	for _, st := range seckill.Statuses {
		require.Regexp(t, `(?m)^\s+`+string(st)+`: "`, string(js), "no hint for status %s in app.js", st)
	}
}
