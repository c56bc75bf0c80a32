// Package htmlreport renders a bench.Report as one self-contained HTML page
// (seckill-lab bench --html). The page must open from a file, offline, years
// later, and be read by someone who has never seen a flash sale load test:
// so there are no external scripts, fonts or stylesheets, no JavaScript at
// all, and every chart is inline SVG computed here, on the server side,
// with a sentence under it saying how to read it.
//
// The package has four parts:
//   - a view model (view.go) of already formatted strings (format.go), so
//     the template holds no logic beyond loops and conditionals;
//   - a small chart kit (svg.go): shapes in drawing order and a linear
//     scale with "nice" ticks, no markup;
//   - the charts of this page (charts.go), built with the kit;
//   - one html/template (page.html.tmpl, embedded), which escapes every
//     string it prints (problem strings come from the system under test
//     and may contain anything).
//
// A chart library would bring JavaScript or a renderer the page does not
// need; the three charts here are a few hundred lines of arithmetic.
package htmlreport

import (
	_ "embed"
	"errors"
	"html/template"
	"io"

	"github.com/seckill/seckill/bench"
)

//go:embed page.html.tmpl
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"n": svgCoord}).Parse(pageHTML))

// WriteHTML renders r as a single self-contained HTML page: verdict and
// configuration, ratios against the baselines, a per-step summary, charts
// (latency over time, funnel, throughput per step) and per-outcome latency.
func WriteHTML(w io.Writer, r *bench.Report) error {
	if r == nil {
		return errors.New("htmlreport: WriteHTML: nil report")
	}
	return pageTemplate.Execute(w, buildPage(r))
}
