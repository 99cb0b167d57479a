package discovery_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// The bytes Curator 5.4's JsonInstanceSerializer writes for one instance,
// in its full form (compatibleSerializationMode false) and its default
// compatible form (no "enabled"), taken from the real jar.
const (
	curatorFull       = `{"name":"svc","id":"id1","address":"10.0.0.1","port":8080,"sslPort":null,"payload":{"@class":"java.util.HashMap","k":"v","n":3},"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true},{"value":"/x","variable":false}]},"enabled":true}`
	curatorCompatible = `{"name":"svc","id":"id3","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null}`
)

func TestInstanceJSONIsCuratorsByteForByte(t *testing.T) {
	spec, err := discovery.ParseURISpec("{scheme}://{address}:{port}/x")
	require.NoError(t, err)
	inst := discovery.Instance{
		Name: "svc", ID: "id1", Address: "10.0.0.1", Port: port(8080),
		Payload:             json.RawMessage(`{"@class":"java.util.HashMap","k":"v","n":3}`),
		RegistrationTimeUTC: 1700000000000, ServiceType: discovery.Dynamic, URISpec: spec,
	}
	b, err := json.Marshal(inst)
	require.NoError(t, err)
	assert.Equal(t, curatorFull, string(b))

	var back discovery.Instance
	require.NoError(t, json.Unmarshal([]byte(curatorFull), &back))
	assert.Equal(t, inst, back)
	assert.Equal(t, "http://10.0.0.1:8080/x", back.BuildURI(nil))
	back.SSLPort = port(8443)
	assert.Equal(t, "https://10.0.0.1:8080/x", back.BuildURI(nil))
	assert.Equal(t, "ftp://10.0.0.1:8080/x", back.BuildURI(map[string]string{"scheme": "ftp"}))
}

func TestInstanceWithoutEnabledIsEnabled(t *testing.T) {
	var inst discovery.Instance
	require.NoError(t, json.Unmarshal([]byte(curatorCompatible), &inst))
	assert.False(t, inst.Disabled)
	assert.Empty(t, inst.Address)
	assert.Nil(t, inst.Port)
	assert.Nil(t, inst.Payload)
	assert.Nil(t, inst.URISpec)
	b, err := json.Marshal(inst)
	require.NoError(t, err)
	assert.Equal(t, curatorCompatible[:len(curatorCompatible)-1]+`,"enabled":true}`, string(b))
}

func TestURISpecIsParsedAsCuratorDoes(t *testing.T) {
	spec, err := discovery.ParseURISpec("{ scheme }://x{[}y{]}")
	require.NoError(t, err)
	assert.Equal(t, []discovery.URIPart{{Value: "scheme", Variable: true}, {Value: "://x"}, {Value: "[", Variable: true}, {Value: "y"}, {Value: "]", Variable: true}}, spec.Parts)
	assert.Equal(t, "http://x{y}", discovery.Instance{URISpec: spec}.BuildURI(nil))
	for _, bad := range []string{"{a{b}}", "a}", "{a"} {
		_, err := discovery.ParseURISpec(bad)
		assert.Error(t, err, bad)
	}
}
