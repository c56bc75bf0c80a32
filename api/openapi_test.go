package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/testenv"
)

// TestMain has every test of this package check each answer its API gives
// against the OpenAPI document (testenv.CheckAnswers): the document's
// schemas are the ones the real answers are held to.
func TestMain(m *testing.M) {
	if err := testenv.CheckAnswers(); err != nil {
		fmt.Fprintln(os.Stderr, "api/openapi.yaml:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// openAPIDoc is the document as plain JSON values, for the tests that read
// what it says.
func openAPIDoc(t *testing.T) map[string]any {
	t.Helper()
	raw, err := api.OpenAPI()
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	return doc
}

// obj is the object at path in v ({} when absent).
func obj(v any, path ...string) map[string]any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	m, _ := v.(map[string]any)
	return m
}

// GET /openapi.json serves the document (public, JSON), and it is a valid
// OpenAPI 3.1 document (kin-openapi's loader and validator).
func TestOpenAPIServed(t *testing.T) {
	srv, err := api.New(api.Config{JWTSecret: testenv.JWTSecret, WebhookSecret: testenv.WebhookSecret,
		Operators: &auth.Operators{Bootstrap: testenv.AdminToken}, Shoppers: &auth.Shoppers{Secrets: [][]byte{testenv.JWTSecret}}}, routesOnly())
	require.NoError(t, err)
	res, err := srv.App().Test(httptest.NewRequest(http.MethodGet, "/openapi.json", nil), -1)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	want, err := api.OpenAPI()
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(body))
	_, err = testenv.OpenAPIRouter(body)
	require.NoError(t, err, "a valid OpenAPI document")
	require.Equal(t, "3.1.0", openAPIDoc(t)["openapi"])
}

// Every route Fiber serves, with every optional one mounted (dev, the
// sandbox's checkout pages, Stripe's webhook or, without Stripe, the
// seckill one), is an operation of the document, and every operation is a
// route: neither can change without the other. Each operation's security
// is its access rule (api/access.go): none for a public route, the
// shopper's JWT, a provider's signature, or the operator's token with the
// rule's role in x-seckill-role.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := openAPIDoc(t)
	rules := api.AccessRulesForTest()
	routed := map[string]bool{}
	for _, stripe := range []api.StripeEvents{noStripe{}, nil} {
		srv, err := api.New(api.Config{JWTSecret: testenv.JWTSecret, WebhookSecret: testenv.WebhookSecret,
			Operators: &auth.Operators{Bootstrap: testenv.AdminToken}, Shoppers: &auth.Shoppers{Secrets: [][]byte{testenv.JWTSecret}}, Dev: true, StripeEvents: stripe, CheckoutPages: http.NotFoundHandler()}, routesOnly())
		require.NoError(t, err)
		for _, r := range srv.App().GetRoutes(true) {
			if r.Method == http.MethodHead {
				continue // a GET's
			}
			routed[r.Method+" "+r.Path] = true
		}
	}
	documented := map[string]bool{}
	for path, item := range obj(doc, "paths") {
		fiberPath := regexp.MustCompile(`\{(\w+)\}`).ReplaceAllString(path, ":$1")
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			key := strings.ToUpper(method) + " " + fiberPath
			documented[key] = true
			require.True(t, routed[key], "%s %s is documented in api/openapi.yaml but no route serves it", strings.ToUpper(method), path)
			rule, ok := rules[key]
			require.True(t, ok, "%s has no access rule", key)
			var schemes []string
			for _, req := range op.(map[string]any)["security"].([]any) {
				for name := range req.(map[string]any) {
					schemes = append(schemes, name)
				}
			}
			switch rule.Who {
			case "public":
				require.Empty(t, schemes, "%s is public", key)
			case "shopper":
				require.Equal(t, []string{"shopperJWT"}, schemes, key)
			case "provider":
				require.Len(t, schemes, 1, key)
				require.Contains(t, []string{"webhookSignature", "stripeSignature"}, schemes[0], key)
			case "operator":
				require.Equal(t, []string{"operatorToken"}, schemes, key)
				require.Equal(t, string(rule.Role), op.(map[string]any)["x-seckill-role"], "%s: the role of api/access.go", key)
			default:
				t.Fatalf("%s: a rule for %q, which this test does not know", key, rule.Who)
			}
		}
	}
	for key := range routed {
		require.True(t, documented[key], "route %s is not in api/openapi.yaml", key)
	}
	require.Len(t, documented, len(routed))
}

// Each operation's query parameters in the document are the ones its
// route takes: a parameter it does not take is 400 naming exactly the
// document's, and an operation without any reads no query at all.
func TestOpenAPIQueryParametersAreTheRoutes(t *testing.T) {
	doc := openAPIDoc(t)
	srv, err := api.New(api.Config{JWTSecret: testenv.JWTSecret, WebhookSecret: testenv.WebhookSecret,
		Operators: &auth.Operators{Bootstrap: testenv.AdminToken}, Shoppers: &auth.Shoppers{Secrets: [][]byte{testenv.JWTSecret}}, Dev: true}, routesOnly())
	require.NoError(t, err)
	app := srv.App()
	shopper, err := auth.IssueToken(testenv.JWTSecret, 7, time.Hour, time.Now())
	require.NoError(t, err)
	takes := regexp.MustCompile(`this route takes ([a-z_, ]+)"`)
	checked := 0
	for path, item := range obj(doc, "paths") {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			var want []string
			params, _ := op.(map[string]any)["parameters"].([]any)
			shared, _ := item.(map[string]any)["parameters"].([]any)
			for _, p := range append(params, shared...) {
				p := p.(map[string]any)
				if ref, ok := p["$ref"].(string); ok {
					p = obj(doc, "components", "parameters", strings.TrimPrefix(ref, "#/components/parameters/"))
				}
				if p["in"] == "query" {
					want = append(want, p["name"].(string))
				}
			}
			req := httptest.NewRequest(strings.ToUpper(method), fill(regexp.MustCompile(`\{(\w+)\}`).ReplaceAllString(path, ":$1"))+"?not_a_parameter=1", nil)
			req.Header.Set("Authorization", "Bearer "+testenv.AdminToken)
			if strings.HasPrefix(path, "/api/") {
				req.Header.Set("Authorization", "Bearer "+shopper)
			}
			res, err := app.Test(req, -1)
			require.NoError(t, err)
			body, _ := io.ReadAll(res.Body)
			got := takes.FindStringSubmatch(string(body))
			if len(want) == 0 {
				require.Nil(t, got, "%s %s takes no query parameter, yet: %s", method, path, body)
				continue
			}
			require.NotNil(t, got, "%s %s: %s", method, path, body)
			require.ElementsMatch(t, want, strings.Split(got[1], ", "), "%s %s: the document's query parameters and the route's", method, path)
			checked++
		}
	}
	require.Equal(t, 5, checked, "the operations with query parameters")
}

// Each error answer of the document (components/responses) is used under
// one status, and lists exactly the codes api/errors.go answers with that
// status: a code added to the API, or moved to another status, must be
// written in the document too.
func TestOpenAPIErrorCodes(t *testing.T) {
	doc := openAPIDoc(t)
	statusOfResponse := map[string]string{}
	for path, item := range obj(doc, "paths") {
		for method, op := range item.(map[string]any) {
			for status, res := range obj(op, "responses") {
				ref, _ := obj(res)["$ref"].(string)
				name, ok := strings.CutPrefix(ref, "#/components/responses/")
				if !ok {
					continue
				}
				if prev, seen := statusOfResponse[name]; seen {
					require.Equal(t, prev, status, "%s %s: %s under two statuses", method, path, name)
				}
				statusOfResponse[name] = status
			}
		}
	}
	codesOf := api.ErrorStatusesForTest()
	enum := obj(doc, "components", "schemas", "Error", "properties", "code")["enum"]
	var all []string
	for _, c := range enum.([]any) {
		all = append(all, c.(string))
	}
	for code := range codesOf {
		require.Contains(t, all, code, "the Error schema's codes")
	}
	require.Len(t, all, len(codesOf), "the Error schema lists no code the API does not have")
	for name, res := range obj(doc, "components", "responses") {
		status, ok := statusOfResponse[name]
		require.True(t, ok, "components/responses/%s is not used", name)
		var listed []string
		for _, c := range obj(res, "content", "application/json", "schema", "properties", "code")["enum"].([]any) {
			listed = append(listed, c.(string))
		}
		var want []string
		for code, s := range codesOf {
			if strconv.Itoa(s) == status {
				want = append(want, code)
			}
		}
		sort.Strings(listed)
		sort.Strings(want)
		require.Equal(t, want, listed, "components/responses/%s (%s): the codes api/errors.go answers with %s", name, status, status)
	}
}

// The answer check can fail: an answer with a status its operation does
// not list, a body its schema refuses, or a path the document does not
// have answered other than 404 NOT_FOUND.
func TestOpenAPIAnswerCheckFails(t *testing.T) {
	raw, err := api.OpenAPI()
	require.NoError(t, err)
	r, err := testenv.OpenAPIRouter(raw)
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/healthz", nil)
	h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"4bf92f3577b34da6a3ce929d0e0e4736"}}
	ok := `{"status":"ok","version":"v1","commit":"c","build_time":"b","go_version":"go1"}`
	require.NoError(t, testenv.AnswerProblem(r, req, 200, h, []byte(ok)))
	require.Error(t, testenv.AnswerProblem(r, req, 418, h, []byte(ok)), "a status not listed")
	require.Error(t, testenv.AnswerProblem(r, req, 200, h, []byte(`{"status":"ok"}`)), "required fields missing")
	require.Error(t, testenv.AnswerProblem(r, req, 200, h, []byte(strings.Replace(ok, `"status"`, `"uptime":1,"status"`, 1))), "a field not documented")
	require.Error(t, testenv.AnswerProblem(r, req, 200, http.Header{"Content-Type": {"application/json"}}, []byte(ok)), "no X-Request-ID")
	unknown := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/nowhere", nil)
	require.Error(t, testenv.AnswerProblem(r, unknown, 200, h, []byte(ok)))
	notFound := `{"code":"NOT_FOUND","message":"no route GET /nowhere","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`
	require.NoError(t, testenv.AnswerProblem(r, unknown, 404, h, []byte(notFound)))
	order := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/api/v1/sessions/1/orders", nil)
	require.Error(t, testenv.AnswerProblem(r, order, 409, h, []byte(strings.Replace(notFound, "NOT_FOUND", "ENDED", 1))), "ENDED is 410's")
	require.NoError(t, testenv.AnswerProblem(r, order, 409, h, []byte(strings.Replace(notFound, "NOT_FOUND", "SOLD_OUT", 1))))
}
