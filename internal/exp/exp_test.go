package exp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

var reached atomic.Int64

func noop(ctx workflow.Context) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	return workflow.ExecuteLocalActivity(ctx, act).Get(ctx, nil)
}

func orderShape(ctx workflow.Context) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	if err := workflow.ExecuteLocalActivity(ctx, act).Get(ctx, nil); err != nil {
		return err
	}
	return workflow.Sleep(ctx, 30*time.Second)
}

func act(context.Context) error { reached.Add(1); return nil }

func env(t *testing.T) (client.Client, string) {
	c, err := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
	if err != nil {
		t.Fatal(err)
	}
	return c, "exp-" + strconv.Itoa(rand.IntN(1<<30))
}

func worker(t *testing.T, c client.Client, q string) sdkworker.Worker {
	w := sdkworker.New(c, q, sdkworker.Options{MaxConcurrentWorkflowTaskPollers: 8})
	w.RegisterWorkflowWithOptions(noop, workflow.RegisterOptions{Name: "Noop"})
	w.RegisterWorkflowWithOptions(orderShape, workflow.RegisterOptions{Name: "OrderShape"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

func closed(conc, n int, f func(i int)) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
	return time.Since(t0)
}

func TestEager(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("EXP_N"))
	if n == 0 {
		n = 1000
	}
	ctx := context.Background()
	c, q := env(t)
	defer c.Close()
	w := worker(t, c, q)
	defer w.Stop()
	starter, _ := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
	defer starter.Close()
	for round := 0; round < 2; round++ {
		d := closed(64, n, func(i int) {
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-a%d-%d", q, round, i), TaskQueue: q, EnableEagerStart: true}, "Noop")
			if err == nil {
				err = run.Get(ctx, nil)
			}
			if err != nil {
				t.Error(err)
			}
		})
		fmt.Printf("round %d A noop eager exec+wait c64: %.0f/s\n", round, float64(n)/d.Seconds())
		for _, conc := range []int{8, 16, 64} {
			for _, eager := range []bool{true, false} {
				cl := starter
				if eager {
					cl = c
				}
				reached.Store(0)
				t0 := time.Now()
				var lat atomic.Int64
				closed(conc, n, func(i int) {
					s := time.Now()
					_, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%v%d-%d-%d", q, eager, round, conc, i), TaskQueue: q, EnableEagerStart: eager}, "OrderShape")
					lat.Add(int64(time.Since(s)))
					if err != nil {
						t.Error(err)
					}
				})
				ds := time.Since(t0)
				for reached.Load() < int64(n) {
					time.Sleep(5 * time.Millisecond)
				}
				d := time.Since(t0)
				fmt.Printf("round %d OrderShape eager=%v c%d: starts %.0f/s (mean start %.0fms), all LA done %.0f/s\n", round, eager, conc, float64(n)/ds.Seconds(), float64(lat.Load())/float64(n)/1e6, float64(n)/d.Seconds())
			}
		}
	}
}

func TestShapes(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("EXP_N"))
	if n == 0 {
		n = 1000
	}
	ctx := context.Background()
	c, q := env(t)
	defer c.Close()
	w := worker(t, c, q)
	defer w.Stop()
	starter, _ := client.Dial(client.Options{HostPort: "127.0.0.1:7233"}) // a second connection, no worker
	defer starter.Close()
	for round := 0; round < 2; round++ {
		// A: eager, execute+wait, c=64
		d := closed(64, n, func(i int) {
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-a%d-%d", q, round, i), TaskQueue: q, EnableEagerStart: true}, "Noop")
			if err == nil {
				err = run.Get(ctx, nil)
			}
			if err != nil {
				t.Error(err)
			}
		})
		fmt.Printf("round %d A noop eager exec+wait c64: %.0f/s\n", round, float64(n)/d.Seconds())
		d = closed(64, n, func(i int) {
			run, err := starter.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-b%d-%d", q, round, i), TaskQueue: q}, "Noop")
			if err == nil {
				err = run.Get(ctx, nil)
			}
			if err != nil {
				t.Error(err)
			}
		})
		fmt.Printf("round %d B noop non-eager exec+wait c64: %.0f/s\n", round, float64(n)/d.Seconds())
		for _, conc := range []int{16, 64} {
			for _, wf := range []string{"Noop", "OrderShape"} {
				reached.Store(0)
				t0 := time.Now()
				var lat atomic.Int64
				closed(conc, n, func(i int) {
					s := time.Now()
					_, err := starter.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%s%d-%d-%d", q, wf, round, conc, i), TaskQueue: q}, wf)
					lat.Add(int64(time.Since(s)))
					if err != nil {
						t.Error(err)
					}
				})
				ds := time.Since(t0)
				for reached.Load() < int64(n) {
					time.Sleep(5 * time.Millisecond)
				}
				d := time.Since(t0)
				fmt.Printf("round %d fire-and-forget %s c%d: starts %.0f/s (mean start %.0fms), all LA done %.0f/s\n", round, wf, conc, float64(n)/ds.Seconds(), float64(lat.Load())/float64(n)/1e6, float64(n)/d.Seconds())
			}
		}
	}
}
