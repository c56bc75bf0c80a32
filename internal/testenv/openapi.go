package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/seckill/seckill/api"
)

// answerRouter, once CheckAnswers set it, finds the operation of each
// request the Envs' clients send; nil: answers are not checked.
var answerRouter routers.Router

// CheckAnswers makes every Env built from now on check each answer its API
// gives (to Do and to the Env's clients) against the API's OpenAPI
// document, api/openapi.yaml: a status the operation does not list, a
// missing header or a body its schema refuses fails the test. A package's
// TestMain calls it (the api package's does), so that its tests keep the
// document true without a line of their own.
func CheckAnswers() error {
	raw, err := api.OpenAPI()
	if err != nil {
		return err
	}
	r, err := OpenAPIRouter(raw)
	if err != nil {
		return err
	}
	answerRouter = r
	return nil
}

// OpenAPIRouter loads and validates an OpenAPI document (JSON) and routes
// requests to its operations.
func OpenAPIRouter(doc []byte) (routers.Router, error) {
	loader := openapi3.NewLoader()
	d, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, err
	}
	if err := d.Validate(context.Background()); err != nil {
		return nil, err
	}
	return gorillamux.NewRouter(d)
}

// AnswerProblem says how an answer breaks the document r routes by (nil:
// it does not). A request no operation takes must have been answered 404
// NOT_FOUND in the error shape, as the API answers every other path and
// method. HEAD answers have no body to check, and OPTIONS is the CORS
// preflight, which the document describes in prose: both pass.
func AnswerProblem(r routers.Router, req *http.Request, status int, header http.Header, body []byte) error {
	if req.Method == http.MethodHead || req.Method == http.MethodOptions {
		return nil
	}
	route, params, err := r.FindRoute(req)
	if err != nil {
		if !errors.Is(err, routers.ErrPathNotFound) && !errors.Is(err, routers.ErrMethodNotAllowed) {
			return err
		}
		var e struct{ Code string }
		if status != http.StatusNotFound || json.Unmarshal(body, &e) != nil || e.Code != "NOT_FOUND" {
			return fmt.Errorf("no documented operation, and the answer is not 404 NOT_FOUND")
		}
		return nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// answerCheck is an Env's check of its API's answers: the problems found
// are the test's failures, reported when the test ends (a request may
// come from a goroutine that outlives the test function).
type answerCheck struct {
	base   http.RoundTripper
	router routers.Router
	mu     sync.Mutex
	found  []string
}

func (a *answerCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := a.base.RoundTrip(req)
	if err != nil {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return res, nil // the caller meets the broken body as it would have
	}
	if p := AnswerProblem(a.router, req, res.StatusCode, res.Header, body); p != nil {
		a.mu.Lock()
		a.found = append(a.found, fmt.Sprintf("%s %s → %d: %v\nbody: %.600s", req.Method, req.URL.RequestURI(), res.StatusCode, p, body))
		a.mu.Unlock()
	}
	return res, nil
}

// report fails t with what the check found.
func (a *answerCheck) report(t testing.TB) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, p := range a.found {
		if i == 5 {
			t.Errorf("… and %d more answers that break api/openapi.yaml", len(a.found)-i)
			break
		}
		t.Errorf("an answer breaks api/openapi.yaml (fix the API or the document): %s", p)
	}
	a.found = nil
}

// checkAnswers gives e a client that checks its answers when CheckAnswers
// is on; else the shared one.
func (e *Env) checkAnswers() {
	e.http = httpClient
	if answerRouter == nil {
		return
	}
	check := &answerCheck{base: httpClient.Transport, router: answerRouter}
	if check.base == nil {
		check.base = http.DefaultTransport
	}
	c := *httpClient
	c.Transport = check
	e.http = &c
	e.T.Cleanup(func() { check.report(e.T) })
}
