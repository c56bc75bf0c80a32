package seckill_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/worker"
)

// The search attributes have one source, worker.SearchAttributeKeys.
// scripts/temporal-dev.sh asks `seckill search-attributes` for them and
// never spells one; every other spelling in the repository (the Temporal
// CLI's "Name=Type" in docker-compose.yml and in Go that starts a dev
// server, "`Name` (Type)" in the docs) must match the list, name and type,
// and list all of it: a file that registers three of four attributes
// starts a server the worker refuses.
func TestSearchAttributesSpelledAsTheList(t *testing.T) {
	want := worker.SearchAttributeSpecs()
	types := `Keyword|KeywordList|Text|Int|Double|Bool|Datetime`
	spellings := []*regexp.Regexp{
		regexp.MustCompile(`\b([A-Z]\w*)=(` + types + `)\b`),
		regexp.MustCompile("`([A-Z]\\w*)`\\s+\\((" + types + `)\)`),
	}
	known := map[string]string{} // name → "Name=Type"
	for _, spec := range want {
		name, _, _ := strings.Cut(spec, "=")
		known[name] = spec
	}

	spelledBy := map[string][]string{} // file → the specs it spells
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") && name != ".ci" || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".sh", ".yml", ".yaml", ".md":
		default:
			if name != "Makefile" && name != "Dockerfile" && path != filepath.Join(".ci", "run") {
				return nil
			}
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, re := range spellings {
			for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
				if _, ok := known[m[1]]; !ok && m[2] != "Keyword" && m[2] != "Int" {
					continue // not ours: neither our name nor our types
				}
				spelledBy[path] = append(spelledBy[path], m[1]+"="+m[2])
			}
		}
		return nil
	})
	require.NoError(t, err)

	require.NotContains(t, spelledBy, filepath.Join("scripts", "temporal-dev.sh"),
		"scripts/temporal-dev.sh registers what `seckill search-attributes` prints; it must not spell the list itself")
	require.Contains(t, spelledBy, "docker-compose.yml", "docker-compose.yml registers the search attributes")
	for path, specs := range spelledBy {
		if path == filepath.Join("worker", "worker.go") {
			continue // the list's own doc comment shows the format
		}
		for _, spec := range specs {
			name, _, _ := strings.Cut(spec, "=")
			require.Equal(t, known[name], spec, "%s spells a search attribute not as worker.SearchAttributeKeys has it", path)
		}
		for _, w := range want {
			require.True(t, slices.Contains(specs, w), "%s spells search attributes %v but not %s (worker.SearchAttributeKeys)", path, specs, w)
		}
	}
}
