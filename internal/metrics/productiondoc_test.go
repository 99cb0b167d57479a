package metrics_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// The table of docs/production.md ("Metrics") is the instruments'
// documentation: one row per instrument, with its name, type, unit and
// attributes as the code makes them.
func TestTheProductionDocListsEveryInstrument(t *testing.T) {
	doc, err := os.ReadFile("../../docs/production.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Metrics\n")
	require.True(t, ok, "no Metrics section")
	section, _, _ = strings.Cut(section, "\n## ")

	type row struct{ kind, unit, attrs string }
	code := map[string]row{}
	for _, in := range metrics.Instruments {
		var keys []string
		for _, k := range in.Attributes {
			keys = append(keys, string(k))
		}
		code[in.Name] = row{in.Kind, in.Unit, strings.Join(keys, ",")}
	}
	ticked := regexp.MustCompile("`([^`]*)`")
	documented := map[string]row{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `zkrecipes.") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		require.GreaterOrEqual(t, len(cells), 5, "row %q", line)
		var keys []string
		for _, m := range ticked.FindAllStringSubmatch(cells[3], -1) {
			keys = append(keys, m[1])
		}
		name := strings.Trim(cells[0], "`")
		documented[name] = row{cells[1], strings.Trim(cells[2], "`"), strings.Join(keys, ",")}
	}
	assert.Equal(t, code, documented)
}
