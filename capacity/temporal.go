package capacity

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Temporal reads a Temporal server's persistence requests from its
// Prometheus endpoint (the dev server's --metrics-port): per operation
// ("op:CreateWorkflowExecution"), summed over services and namespaces, and
// split into "writes" and "reads". Scraping is not a persistence request,
// so the probe is not in the counts; the server must run nothing else.
type Temporal struct {
	URL    string // e.g. http://127.0.0.1:9501/metrics
	Client *http.Client
}

func (t *Temporal) Name() string { return "temporal" }

func (t *Temporal) Read(ctx context.Context) (Counts, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return nil, err
	}
	hc := t.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", t.URL, res.Status)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	return ParsePersistence(string(body)), nil
}

// ParsePersistence sums the persistence_requests counters of Prometheus
// text by operation.
func ParsePersistence(text string) Counts {
	c := Counts{"writes": 0, "reads": 0}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "persistence_requests{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "persistence_requests{"), "} ")
		if !ok {
			continue
		}
		op := label(labels, "operation")
		if op == "" {
			continue
		}
		v := atof(value)
		c["op:"+op] += v
		if IsPersistenceRead(op) {
			c["reads"] += v
		} else {
			c["writes"] += v
		}
	}
	return c
}

// IsPersistenceRead tells the operations that only read (Get…, List…,
// Read…, Assert…) from those that write.
func IsPersistenceRead(op string) bool {
	for _, p := range []string{"Get", "List", "Read", "Assert", "Scan", "Count"} {
		if strings.HasPrefix(op, p) {
			return true
		}
	}
	return false
}

// label returns a label's value from `a="x",b="y"`.
func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
