package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// classProperty is the property Jackson types a payload with, as
// Curator's ServiceInstance asks (@JsonTypeInfo(use = Id.CLASS)).
const classProperty = "@class"

// javaClass is a Java binary class name: identifiers, dot-separated ("$"
// for a nested class).
var javaClass = regexp.MustCompile(`^[\p{L}_$][\p{L}\p{N}_$]*(\.[\p{L}_$][\p{L}\p{N}_$]*)*$`)

// JavaPayload returns a payload (for Instance.Payload) that a Curator
// reader whose payload class is class, or Object, reads as an instance of
// class: the JSON object of v (a struct or a map), with Jackson's
// "@class" property first, as Curator's JsonInstanceSerializer writes a
// payload of that class: JavaPayload("com.example.Detail",
// Detail{Zone: "eu-1"}) is {"@class":"com.example.Detail","zone":"eu-1"}.
// The fields are v's JSON names, as encoding/json writes them; a Java
// reader ignores those its class does not have, and leaves the others
// unset. class is a Java binary name, on the reader's classpath (a
// reader that cannot load it fails, for every instance of the service);
// for java.util.HashMap, it is a Map reader's too. See the package
// documentation for which payload each Java payload class reads.
//
// It fails with zkrecipes.ErrInvalidArgument for a class that is not a
// Java name, and a v whose JSON is not an object, or has an "@class" of
// its own naming another class.
func JavaPayload(class string, v any) (json.RawMessage, error) {
	fail := func(format string, args ...any) (json.RawMessage, error) {
		err := fmt.Errorf("%w: java payload: "+format, append([]any{zkrecipes.ErrInvalidArgument}, args...)...)
		return nil, framework.RecipeErr(recipe, "", err)
	}
	if !javaClass.MatchString(class) {
		return fail("%q is not a Java class name", class)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fail("%w", err)
	}
	if len(b) < 2 || b[0] != '{' {
		return fail("a %T is not a JSON object (%.40s): a class reads an object", v, b)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return fail("%w", err)
	}
	if own, ok := fields[classProperty]; ok {
		var name string
		if json.Unmarshal(own, &name) != nil || name != class {
			return fail("%T has an %s of its own, %s", v, classProperty, own)
		}
		delete(fields, classProperty)
		// Written again without it, in encoding/json's order (maps
		// sorted by key; a struct with an "@class" field is rare).
		if b, err = json.Marshal(fields); err != nil {
			return fail("%w", err)
		}
	}
	name, _ := json.Marshal(class) // a string always marshals
	var out bytes.Buffer
	out.Grow(len(b) + len(name) + 12)
	out.WriteString(`{"` + classProperty + `":`)
	out.Write(name)
	if inner := bytes.TrimSpace(b[1 : len(b)-1]); len(inner) > 0 {
		out.WriteByte(',')
		out.Write(inner)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// PayloadClass returns the Java class the payload names in its "@class"
// property (Curator's JsonInstanceSerializer writes it for every object
// payload), or "" if it names none: no payload, a payload that is not an
// object, an object without "@class".
func (i Instance) PayloadClass() string {
	var typed struct {
		Class *string `json:"@class"`
	}
	p := bytes.TrimSpace(i.Payload)
	if len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &typed) != nil || typed.Class == nil {
		return ""
	}
	return *typed.Class
}

// DecodePayload reads the payload into v, as json.Unmarshal, without its
// "@class" property (see PayloadClass): a payload Curator wrote for a
// class of its own decodes into a Go struct with the same fields, or a
// map of them. No payload (JSON null) leaves v as it is. A payload v
// cannot hold fails with zkrecipes.ErrBadData.
func (i Instance) DecodePayload(v any) error {
	b := i.Payload
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if i.PayloadClass() != "" {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err == nil {
			delete(fields, classProperty)
			b, _ = json.Marshal(fields) // raw values marshal as they are
		}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return framework.RecipeErr(recipe, "", fmt.Errorf("%w: payload of instance %s/%s: %w", zkrecipes.ErrBadData, i.Name, i.ID, err))
	}
	return nil
}
