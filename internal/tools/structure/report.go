package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

func writeReport(w io.Writer, r *report) {
	im, lc, sz, ex, sp := r.Imports, r.Lifecycle, r.Size, r.Exported, r.Spellings

	fmt.Fprintf(w, "1. Imports that run back up (layers, bottom to top: %s)\n", strings.Join(im.Layers, " "))
	fmt.Fprintf(w, "   edges between the repository's packages: %d\n", im.Edges)
	list(w, "upward edges", im.UpwardEdges)
	if im.Unranked > 0 {
		list(w, "edges with a side in no layer", im.UnrankedEdges)
	}
	list(w, "recipes/... importing internal/...", im.RecipesToInternalList)
	list(w, "internal/... importing hold, recipes/... or integration/...", im.InternalToUpperList)
	list(w, "cmd/zkr importing the library's internal/...", im.ZkrToInternalList)

	fmt.Fprintf(w, "\n2. Lifecycle scaffolding (recipes/; library = the root module's non-test files)\n")
	t := table(w)
	fmt.Fprintf(t, "   usable() definitions\t%d\n", lc.UsableDefs)
	fmt.Fprintf(t, "   usable() call sites\t%d\n", lc.UsableCalls)
	fmt.Fprintf(t, "   Start method bodies\t%d\n", lc.StartMethods)
	fmt.Fprintf(t, "   Close method bodies\t%d\n", lc.CloseMethods)
	fmt.Fprintf(t, "   go statements\t%d in recipes/, %d in the library\n", lc.GoStmtsRecipes, lc.GoStmtsLibrary)
	fmt.Fprintf(t, "   .Go( calls (any receiver)\t%d in recipes/, %d in the library\n", lc.GoCallsRecipes, lc.GoCallsLibrary)
	fmt.Fprintf(t, "   hand-written backoffs (heuristic)\t%d in recipes/, %d in the library\n", lc.BackoffRecipes, lc.BackoffLibrary)
	fmt.Fprintf(t, "   retry.Do calls\t%d in recipes/, %d in the library\n", lc.RetryDoRecipes, lc.RetryDoLibrary)
	t.Flush()
	counts(w, "go statements per top-level folder", lc.GoStmtsPerLayer)
	counts(w, "go statements per recipes/ file", lc.GoStmtsPerFile)
	counts(w, "usable() call sites per file", lc.UsableCallsByFile)
	list(w, "functions that grow a pause", lc.BackoffFuncs)

	fmt.Fprintf(w, "\n3. Size (library, non-test)\n")
	fmt.Fprintf(w, "   %d files, %d lines\n", sz.Files, sz.Lines)
	fmt.Fprintf(w, "   files over %d lines: %d\n", sz.MaxFile, sz.BigFiles)
	counts(w, "", sz.BigFileMap)
	fmt.Fprintf(w, "   functions over %d lines (func to closing brace): %d\n", sz.MaxFunc, sz.LongFuncs)
	counts(w, "", sz.LongFunc)

	fmt.Fprintf(w, "\n4. Exported names (top-level identifiers, methods on exported types)\n")
	fmt.Fprintf(w, "   %d in all, %d outside internal/ and main packages\n", ex.Total, ex.Public)
	counts(w, "", ex.PerPackage)

	fmt.Fprintf(w, "\n5. Spellings\n")
	fmt.Fprintf(w, "   options.go files: %d, %d lines\n", sp.OptionsFiles, sp.OptionsLines)
	counts(w, "", sp.OptionsPerFile)
	fmt.Fprintf(w, "   definitions of WithParticipantID: %d\n", sp.WithParticipant)
	for _, d := range sp.WithPartDefs {
		fmt.Fprintf(w, "      %s\n", d)
	}
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

func list(w io.Writer, title string, items []string) {
	fmt.Fprintf(w, "   %s: %d\n", title, len(items))
	items = slices.Sorted(slices.Values(items))
	for _, it := range items {
		fmt.Fprintf(w, "      %s\n", it)
	}
}

func counts(w io.Writer, title string, m map[string]int) {
	if title != "" {
		fmt.Fprintf(w, "   %s:\n", title)
	}
	t := table(w)
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(t, "      %s\t%d\n", k, m[k])
	}
	t.Flush()
}

// writeDiff lists every number of r that differs from the saved -json
// output in path: the before/after table a step of the redesign reports.
func writeDiff(w io.Writer, path string, r *report) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var before any
	if err := json.Unmarshal(data, &before); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	cur, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var after any
	if err := json.Unmarshal(cur, &after); err != nil {
		return err
	}
	b, a := map[string]float64{}, map[string]float64{}
	flatten("", before, b)
	flatten("", after, a)
	keys := map[string]int{}
	for k := range b {
		keys[k] = 0
	}
	for k := range a {
		keys[k] = 0
	}
	fmt.Fprintf(w, "\nAgainst %s (numbers that changed)\n", path)
	t := table(w)
	fmt.Fprintf(t, "   \tbefore\tafter\n")
	changed := 0
	for _, k := range sortedKeys(keys) {
		vb, okb := b[k]
		va, oka := a[k]
		if okb && oka && vb == va {
			continue
		}
		changed++
		fmt.Fprintf(t, "   %s\t%s\t%s\n", k, num(vb, okb), num(va, oka))
	}
	t.Flush()
	if changed == 0 {
		fmt.Fprintf(w, "   none\n")
	}
	return nil
}

func num(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprint(v)
}

// flatten keeps the numbers of a decoded JSON value under dotted keys;
// lists are left out, their counts are numbers of their own.
func flatten(prefix string, v any, out map[string]float64) {
	switch v := v.(type) {
	case float64:
		out[prefix] = v
	case map[string]any:
		for k, e := range v {
			if prefix != "" {
				k = prefix + "." + k
			}
			flatten(k, e, out)
		}
	}
}
