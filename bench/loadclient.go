package bench

import (
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/client"
)

// httpClient is the load loop's client, on fasthttp: the load generator
// must cost far less than the server it measures. Everything else goes
// through the typed client.
type httpClient struct {
	base string
	hc   *fasthttp.Client
}

// newLoadClient is the load loop's client of the API at base: as many
// connections as requests in flight.
func newLoadClient(base string) *httpClient {
	return &httpClient{base: base, hc: &fasthttp.Client{MaxConnsPerHost: 4096, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}}
}

// warm opens the connections a closed-loop burst at level uses before its
// clock starts. Without it every burst began with level connections dialled
// at once, and the first few hundred answers — the winners' — carried the
// dials and the kernel's accept queue besides the handler. In production
// shoppers reach the API through a load balancer that keeps its upstream
// connections open.
func (c *httpClient) warm(level int) {
	for range 2 {
		var wg sync.WaitGroup
		for range level {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, _, _ = c.do("GET", "/healthz", "", nil)
			}()
		}
		wg.Wait()
	}
}

// do sends one request; header is name, value pairs.
func (c *httpClient) do(method, path, auth string, body []byte, header ...string) (int, []byte, string, error) {
	code, raw, layer, _, err := c.send(method, path, auth, body, header...)
	return code, raw, layer, err
}

// send is do, and also returns the answer's X-Request-ID: the trace id
// the API gave the request, which its logs and the order it made carry.
func (c *httpClient) send(method, path, auth string, body []byte, header ...string) (int, []byte, string, string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(c.base + path)
	req.Header.SetMethod(method)
	req.Header.SetContentType("application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.SetBody(body)
	if err := c.hc.Do(req, resp); err != nil {
		return 0, nil, "", "", err
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), string(resp.Header.Peek(client.HeaderLayer)),
		string(resp.Header.Peek(client.HeaderRequestID)), nil
}
