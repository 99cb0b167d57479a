package discovery_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

type detail struct {
	Zone   string `json:"zone"`
	Weight int    `json:"weight"`
}

// JavaPayload writes the bytes Curator 5.4's JsonInstanceSerializer
// (Jackson 2.14) writes for a payload of class zkrecipes.Detail with
// public fields zone and weight, taken from the real jars.
func TestJavaPayloadIsWhatCuratorWritesForThatClass(t *testing.T) {
	b, err := discovery.JavaPayload("zkrecipes.Detail", detail{Zone: "eu", Weight: 3})
	require.NoError(t, err)
	assert.Equal(t, `{"@class":"zkrecipes.Detail","zone":"eu","weight":3}`, string(b))

	b, err = discovery.JavaPayload("java.util.HashMap", map[string]string{"k": "v"})
	require.NoError(t, err)
	assert.Equal(t, `{"@class":"java.util.HashMap","k":"v"}`, string(b))

	b, err = discovery.JavaPayload("a.Empty$Nested", struct{}{})
	require.NoError(t, err)
	assert.Equal(t, `{"@class":"a.Empty$Nested"}`, string(b))

	b, err = discovery.JavaPayload("java.util.HashMap", map[string]string{"@class": "java.util.HashMap", "k": "v"})
	require.NoError(t, err)
	assert.Equal(t, `{"@class":"java.util.HashMap","k":"v"}`, string(b))
}

func TestJavaPayloadRefusesWhatNoJavaClassReads(t *testing.T) {
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"empty class":   testkit.Named("service discovery: ", javaPayload("", detail{}), zkrecipes.ErrInvalidArgument),
		"bad class":     testkit.Named("service discovery: ", javaPayload("a..b", detail{}), zkrecipes.ErrInvalidArgument),
		"string":        testkit.Named("service discovery: ", javaPayload("a.B", "eu"), zkrecipes.ErrInvalidArgument),
		"nil":           testkit.Named("service discovery: ", javaPayload("a.B", nil), zkrecipes.ErrInvalidArgument),
		"slice":         testkit.Named("service discovery: ", javaPayload("a.B", []int{1}), zkrecipes.ErrInvalidArgument),
		"not JSON":      testkit.Named("service discovery: ", javaPayload("a.B", func() {}), zkrecipes.ErrInvalidArgument),
		"another class": testkit.Named("service discovery: ", javaPayload("a.B", map[string]string{"@class": "a.C"}), zkrecipes.ErrInvalidArgument),
	})
}

func javaPayload(class string, v any) func() error {
	return func() error { _, err := discovery.JavaPayload(class, v); return err }
}

// A payload's class and fields read back in Go; a payload without a
// class has none, and one that does not fit fails with ErrBadData.
func TestPayloadClassAndFieldsReadBack(t *testing.T) {
	inst := discovery.Instance{Name: "s", ID: "i", Payload: json.RawMessage(`{"@class":"zkrecipes.Detail","zone":"eu","weight":3}`)}
	assert.Equal(t, "zkrecipes.Detail", inst.PayloadClass())
	var d detail
	require.NoError(t, inst.DecodePayload(&d))
	assert.Equal(t, detail{Zone: "eu", Weight: 3}, d)
	var m map[string]any
	require.NoError(t, inst.DecodePayload(&m))
	assert.Equal(t, map[string]any{"zone": "eu", "weight": float64(3)}, m, "without @class")

	for _, p := range []string{``, `  `, `null`, `"eu"`, `{"zone":"eu"}`, `{"@class":3}`, `[1]`} {
		inst.Payload = json.RawMessage(p)
		assert.Empty(t, inst.PayloadClass(), p)
	}
	inst.Payload = nil
	d = detail{Zone: "kept"}
	require.NoError(t, inst.DecodePayload(&d))
	assert.Equal(t, "kept", d.Zone, "no payload leaves v as it is")
	inst.Payload = json.RawMessage(`"eu"`)
	assert.ErrorIs(t, inst.DecodePayload(&d), zkrecipes.ErrBadData)
}
