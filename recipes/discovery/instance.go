package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ServiceType is Curator's ServiceType: how an instance's node is made.
type ServiceType string

// The service types of Curator.
const (
	// Dynamic: an ephemeral node, gone with the registering session (and
	// made again by this package when the session is replaced).
	Dynamic ServiceType = "DYNAMIC"
	// Static: a persistent node.
	Static ServiceType = "STATIC"
	// Permanent: a persistent node.
	Permanent ServiceType = "PERMANENT"
	// DynamicSequential: an ephemeral-sequential node: the node's name is
	// the instance's id followed by a sequence number, behind Curator's
	// protected prefix ("_c_<uuid>-").
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
)

// Valid reports whether t is one of Curator's service types.
func (t ServiceType) Valid() bool {
	switch t {
	case Dynamic, Static, Permanent, DynamicSequential:
		return true
	}
	return false
}

// Instance is one instance of a service, Curator's ServiceInstance, as
// stored in its node by Curator's JsonInstanceSerializer: a JSON object
// with the fields name, id, address, port, sslPort, payload,
// registrationTimeUTC, serviceType, uriSpec and enabled, in that order.
type Instance struct {
	// Name is the service's name: one path segment.
	Name string
	// ID is the instance's id, unique within the service: one path
	// segment (NewInstance makes a random UUID, as Curator's builder).
	ID string
	// Address is the host or IP to reach it ("" is JSON null).
	Address string
	// Port and SSLPort are nil when unset (JSON null).
	Port, SSLPort *int
	// Payload is the payload's JSON as stored, null when nil. The bytes
	// are kept as read: a Go process reads a Java payload, and the other
	// way round, unchanged. Which JSON a Java reader reads depends on its
	// payload class, which the Go side cannot know (see Payloads in the
	// package documentation: a Map reads an object without "@class", a
	// class of one's own needs its "@class"); JavaPayload writes what a
	// given class reads, PayloadClass and DecodePayload read what Curator
	// wrote.
	Payload json.RawMessage
	// RegistrationTimeUTC is milliseconds since the Unix epoch.
	RegistrationTimeUTC int64
	// ServiceType is how the node is made ("" reads as Dynamic).
	ServiceType ServiceType
	// URISpec is the instance's URI template, nil when unset.
	URISpec *URISpec
	// Disabled says that providers may not pick it (JSON "enabled":
	// false). The zero value is enabled, as every instance Curator's
	// builder makes; an instance whose JSON has no "enabled" (Curator's
	// default serializer in its compatible mode omits it) is enabled too.
	Disabled bool
}

// wireInstance is the JSON object, in the order Jackson writes it.
type wireInstance struct {
	Name                string          `json:"name"`
	ID                  string          `json:"id"`
	Address             *string         `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC int64           `json:"registrationTimeUTC"`
	ServiceType         ServiceType     `json:"serviceType"`
	URISpec             *URISpec        `json:"uriSpec"`
	Enabled             *bool           `json:"enabled,omitempty"`
}

// MarshalJSON writes i as Curator's JsonInstanceSerializer does (its
// full form, with "enabled").
func (i Instance) MarshalJSON() ([]byte, error) {
	w := wireInstance{
		Name: i.Name, ID: i.ID, Port: i.Port, SSLPort: i.SSLPort,
		Payload: i.Payload, RegistrationTimeUTC: i.RegistrationTimeUTC,
		ServiceType: i.ServiceType, URISpec: i.URISpec,
	}
	enabled := !i.Disabled
	w.Enabled = &enabled
	if i.Address != "" {
		w.Address = &i.Address
	}
	if w.ServiceType == "" {
		w.ServiceType = Dynamic
	}
	if len(bytes.TrimSpace(w.Payload)) == 0 {
		w.Payload = nil // null
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what Curator's JsonInstanceSerializer writes, in
// either of its modes; unknown fields are ignored, as Curator does.
func (i *Instance) UnmarshalJSON(b []byte) error {
	var w wireInstance
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*i = Instance{
		Name: w.Name, ID: w.ID, Port: w.Port, SSLPort: w.SSLPort,
		RegistrationTimeUTC: w.RegistrationTimeUTC, ServiceType: w.ServiceType,
		URISpec: w.URISpec, Disabled: w.Enabled != nil && !*w.Enabled,
	}
	if w.Address != nil {
		i.Address = *w.Address
	}
	if len(w.Payload) > 0 && string(w.Payload) != "null" {
		i.Payload = append(json.RawMessage(nil), w.Payload...)
	}
	if i.ServiceType == "" {
		i.ServiceType = Dynamic
	}
	return nil
}

// BuildURI fills the instance's URI template (Curator's buildUriSpec):
// {scheme} ("https" if SSLPort is set, else "http"), {name}, {id},
// {address}, {port}, {ssl-port}, {registration-time-utc}, {service-type},
// "[" and "]" for braces, and vars, which win. "" without a template.
func (i Instance) BuildURI(vars map[string]string) string {
	if i.URISpec == nil {
		return ""
	}
	local := map[string]string{
		"[": "{", "]": "}", "scheme": "http",
		"name": i.Name, "id": i.ID, "address": i.Address,
		"registration-time-utc": strconv.FormatInt(i.RegistrationTimeUTC, 10),
		"service-type":          strings.ToLower(string(i.ServiceType)),
		"port":                  "", "ssl-port": "",
	}
	if i.Port != nil {
		local["port"] = strconv.Itoa(*i.Port)
	}
	if i.SSLPort != nil {
		local["ssl-port"] = strconv.Itoa(*i.SSLPort)
		local["scheme"] = "https"
	}
	for k, v := range vars {
		local[k] = v
	}
	var b strings.Builder
	for _, p := range i.URISpec.Parts {
		if !p.Variable {
			b.WriteString(p.Value)
			continue
		}
		b.WriteString(local[p.Value]) // an unknown variable is left out, as Curator
	}
	return b.String()
}

// URISpec is Curator's UriSpec: a template of literal parts and
// {variables}, stored as {"parts":[{"value":...,"variable":...}]}.
type URISpec struct {
	Parts []URIPart `json:"parts"`
}

// URIPart is one part of a URISpec.
type URIPart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// ParseURISpec parses a template such as "{scheme}://{address}:{port}/x"
// as Curator's UriSpec(String) does: variable names are trimmed; a brace
// inside a variable, or one not closed, is an error.
func ParseURISpec(raw string) (*URISpec, error) {
	spec := &URISpec{Parts: []URIPart{}}
	inside := false
	var cur strings.Builder
	flush := func() {
		if cur.Len() == 0 {
			return
		}
		v := cur.String()
		if inside {
			v = strings.TrimSpace(v)
		}
		spec.Parts = append(spec.Parts, URIPart{Value: v, Variable: inside})
		cur.Reset()
	}
	for _, r := range raw {
		switch r {
		case '{':
			if inside {
				return nil, fmt.Errorf("uri spec %q: { inside a variable", raw)
			}
			flush()
			inside = true
		case '}':
			if !inside {
				return nil, fmt.Errorf("uri spec %q: } without {", raw)
			}
			flush()
			inside = false
		default:
			cur.WriteRune(r)
		}
	}
	if inside {
		return nil, fmt.Errorf("uri spec %q: variable not closed", raw)
	}
	flush()
	return spec, nil
}
