package worker_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/worker"
)

// registered is what the worker registers: per activity, its registered
// name and the method it runs, as "Type.Method" of package activities.
type registered struct {
	workflows  []string
	activities map[string]string // registered name → Type.Method
}

func (r *registered) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.workflows = append(r.workflows, o.Name)
}

func (r *registered) RegisterActivityWithOptions(a any, o activity.RegisterOptions) {
	r.activities[o.Name] = methodOf(a)
}

// methodOf names a method value as "Type.Method", the way the SDK names an
// activity called by method value (it keeps what follows the last dot).
func methodOf(fn any) string {
	name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	name = strings.TrimSuffix(name, "-fm")
	name = strings.TrimPrefix(name, "github.com/seckill/seckill/activities.")
	return strings.NewReplacer("(*", "", ")", "").Replace(name)
}

func registrations() *registered {
	r := &registered{activities: map[string]string{}}
	worker.Register(r, &activities.Activities{})
	worker.RegisterRefunds(r, &activities.Refunds{})
	worker.RegisterReconcile(r, &activities.Reconciler{})
	worker.RegisterSessions(r, &activities.Sessions{})
	worker.RegisterDraw(r, &activities.Sessions{})
	return r
}

// Every activity is registered under its method's name. A workflow calls
// it by method value (a.CreateOrder), which the SDK turns into the method's
// name; where the worker registered a different name the SDK would map it,
// but the replayer (which registers no activities) and older workers would
// not: a renamed method must fail here, not in production.
func TestActivitiesAreRegisteredUnderTheirMethodNames(t *testing.T) {
	r := registrations()
	require.NotEmpty(t, r.activities)
	for name, method := range r.activities {
		_, m, _ := strings.Cut(method, ".")
		assert.Equal(t, name, m, "%s is registered as %q: the workflows' method value resolves to %q", method, name, m)
	}
}

// Every activity the workflows call is registered: each call of
// workflow.ExecuteActivity or ExecuteLocalActivity in package workflows
// passes a method value on a nil *activities.T (never a string name), and
// that method is what the worker registers under the method's name.
func TestWorkflowsCallRegisteredActivities(t *testing.T) {
	r := registrations()
	byMethod := map[string]string{}
	for name, method := range r.activities {
		byMethod[method] = name
	}
	calls := activityCalls(t, "../workflows")
	require.NotEmpty(t, calls)
	for _, c := range calls {
		if !assert.NotEmpty(t, c.method, "%s: call activities by method value, not %s", c.pos, c.arg) {
			continue
		}
		assert.Contains(t, byMethod, c.method, "%s: %s is not a registered activity", c.pos, c.method)
	}
}

// Every activity in the recorded histories (regular activities and the
// local activities' markers) is registered under the name the history
// recorded, and so is the workflow: running orders replay on this worker.
func TestRecordedHistoriesNameRegisteredActivities(t *testing.T) {
	r := registrations()
	files, err := filepath.Glob("../workflows/testdata/history_*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	seen := map[string]bool{}
	for _, f := range files {
		wf, acts := historyNames(t, f)
		assert.Contains(t, r.workflows, wf, f)
		for _, a := range acts {
			seen[a] = true
			assert.Contains(t, r.activities, a, "%s: activity %q is not registered", f, a)
		}
	}
	for _, a := range []string{activities.CreateOrderName, activities.ApplyPaymentName, activities.CloseAndReleaseName} {
		assert.True(t, seen[a], "no recorded history runs %s: record one (workflows/testdata/README.md)", a)
	}
}

type activityCall struct {
	pos    string
	arg    string
	method string // "Type.Method" when the activity is a method value on a *activities.Type
}

// activityCalls finds the activity calls in the Go files of dir (tests
// excluded) from their syntax: the activity argument and, when it is a
// method value on a package variable of type *activities.T, "T.Method".
func activityCalls(t *testing.T, dir string) []activityCall {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var parsed []*ast.File
	vars := map[string]string{} // package variable → activities type
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		parsed = append(parsed, file)
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				star, ok := vs.Type.(*ast.StarExpr)
				if !ok {
					continue
				}
				if sel, ok := star.X.(*ast.SelectorExpr); ok && isIdent(sel.X, "activities") {
					for _, n := range vs.Names {
						vars[n.Name] = sel.Sel.Name
					}
				}
			}
		}
	}
	var out []activityCall
	for _, file := range parsed {
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !isIdent(fn.X, "workflow") ||
				!slices.Contains([]string{"ExecuteActivity", "ExecuteLocalActivity"}, fn.Sel.Name) {
				return true
			}
			c := activityCall{pos: fset.Position(call.Pos()).String(), arg: exprString(call.Args[1])}
			if sel, ok := call.Args[1].(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && vars[id.Name] != "" {
					c.method = vars[id.Name] + "." + sel.Sel.Name
				}
			}
			out = append(out, c)
			return true
		})
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.BasicLit:
		return e.Value
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	default:
		return reflect.TypeOf(e).String()
	}
}

// historyNames returns the workflow type of a recorded history and the
// activity types it ran, local activities included.
func historyNames(t *testing.T, file string) (workflowType string, acts []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var h struct {
		Events []struct {
			Started *struct {
				WorkflowType struct{ Name string } `json:"workflowType"`
			} `json:"workflowExecutionStartedEventAttributes"`
			Scheduled *struct {
				ActivityType struct{ Name string } `json:"activityType"`
			} `json:"activityTaskScheduledEventAttributes"`
			Marker *struct {
				MarkerName string `json:"markerName"`
				Details    map[string]struct {
					Payloads []struct {
						Data []byte `json:"data"`
					} `json:"payloads"`
				} `json:"details"`
			} `json:"markerRecordedEventAttributes"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal(b, &h), file)
	for _, e := range h.Events {
		switch {
		case e.Started != nil:
			workflowType = e.Started.WorkflowType.Name
		case e.Scheduled != nil:
			acts = append(acts, e.Scheduled.ActivityType.Name)
		case e.Marker != nil && e.Marker.MarkerName == "LocalActivity":
			p := e.Marker.Details["data"].Payloads
			require.NotEmpty(t, p, "%s: local activity marker without data", file)
			var d struct{ ActivityType string }
			require.NoError(t, json.Unmarshal(p[0].Data, &d), "%s: %s", file, strconv.Quote(string(p[0].Data)))
			acts = append(acts, d.ActivityType)
		}
	}
	require.NotEmpty(t, workflowType, file)
	return workflowType, acts
}
