package monitor_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's chromium; .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the dashboard test needs a headless browser: install Debian's chromium (apt-get install -y chromium; .ci/run does)")
	return ""
}

// TestDashboardInBrowser opens the dashboard of a running checkpointed
// window job in headless chromium and finds the operator graph (one node
// per vertex), a non-zero throughput in the operator table, and a
// completed checkpoint in the checkpoints tab; the graph's screenshot is
// a PNG of its size.
func TestDashboardInBrowser(t *testing.T) {
	bin := chromium(t)
	e := newEnv(t, map[string]string{"execution.checkpointing.interval": "100 ms", "state.checkpoints.dir": t.TempDir(), "parallelism.default": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job := e.submit(ctx, unboundedSQL)
	var js jobJSON
	e.get("/jobs/"+job.ID, &js)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("headless", true), chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1400, 1000),
		chromedp.UserDataDir(t.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	// Cancelling the browser context ends chromium and waits for it.
	defer bcancel()

	url := fmt.Sprintf("%s/?refresh=200#/job/%s", e.base, job.ID)
	if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#graph-svg g.node"))); err != nil {
		t.Fatal(err)
	}
	nodes, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#graph-svg g.node").length`))
	if err != nil {
		t.Fatal(err)
	}
	if nodes != len(js.Vertices) {
		t.Errorf("the graph has %d nodes, the job %d vertices", nodes, len(js.Vertices))
	}
	// The page re-renders every 200 ms: a node found may be gone by the
	// time the browser draws it, so the screenshot is retried.
	var shot []byte
	var shotErr error
	await(t, ctx, "a screenshot of the graph", func() bool {
		shot, shotErr = chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS("#graph-svg")))
		return shotErr == nil
	})
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() < 200 || img.Bounds().Dy() < 50 {
		t.Errorf("screenshot of the graph: %v, %v", img, err)
	}
	// The page re-renders every 200 ms; the rates come from the sampler.
	await(t, ctx, "a non-zero throughput on the dashboard", func() bool {
		tp, err := chromedp.Run(bctx, chromedp.Evaluate[float64](
			`Math.max(0, ...Array.from(document.querySelectorAll("#operators td.throughput")).map(td => Number(td.dataset.value)))`))
		if err != nil {
			t.Fatal(err)
		}
		return tp > 0
	})
	// A click through the page's own script: the tab link is re-created
	// by every render.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("tab-checkpoints").click(), true`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`#checkpoints tr.checkpoint[data-status="COMPLETED"]`))); err != nil {
		t.Fatal(err)
	}
	completed, err := chromedp.Run(bctx, chromedp.Evaluate[int](`Number(document.getElementById("completed-count").textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if completed < 1 {
		t.Errorf("the checkpoints tab counts %d completed checkpoints", completed)
	}
	var cps checkpointsJSON
	e.get("/jobs/"+job.ID+"/checkpoints", &cps)
	if completed > cps.Counts.Completed {
		t.Errorf("the dashboard shows %d completed checkpoints, the REST API now %d", completed, cps.Counts.Completed)
	}
}
