package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
)

// EncodeJSON writes v as indented JSON: what --json prints.
func EncodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// EncodeList writes items under key, as --json prints a list: an empty
// list is [], never null, so a script can iterate it as it is.
func EncodeList[S any](w io.Writer, key string, items []S) error {
	if items == nil {
		items = []S{}
	}
	return EncodeJSON(w, map[string]any{key: items})
}

// WriteTable writes rows (tab-separated columns) under header as aligned
// columns, or the line none when there is no row.
func WriteTable(w io.Writer, none, header string, rows []string) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, none)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	return tw.Flush()
}

// SaveJSON writes v as indented JSON to the file at path: the report a
// run keeps (--json of bench and chaos).
func SaveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
