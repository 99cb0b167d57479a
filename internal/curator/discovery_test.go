package curator_test

// Interop with the real curator-x-discovery 5.4 (Debian's
// libcurator-discovery-java): an instance registered by Java is found by
// Go's discovery, and one registered by Go is found, and provided, by
// Java's, payloads included, on the same base path.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// javaInstance is one instance as the Agent's disc-query reports it.
type javaInstance struct {
	ID           string         `json:"id"`
	Address      string         `json:"address"`
	Port         *int           `json:"port"`
	SSLPort      *int           `json:"sslPort"`
	Enabled      bool           `json:"enabled"`
	Payload      map[string]any `json:"payload"`
	PayloadClass string         `json:"payloadClass"`
}

func javaQuery(t *testing.T, p *curator.Process, base, name string) []javaInstance {
	t.Helper()
	line := p.Call(t, "disc-query "+base+" "+name, "disc-instances "+name+" ", 30*time.Second)
	raw, err := hex.DecodeString(strings.TrimPrefix(line, "disc-instances "+name+" "))
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	var out []javaInstance
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return out
}

func goDiscovery(t *testing.T, cl *zktest.Cluster, base string) (*discovery.Discovery, *framework.Client) {
	t.Helper()
	c := observer(t, cl)
	d, err := discovery.New(c, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, c
}

func TestCuratorRegisteredInstanceIsFoundByGo(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	payload := hex.EncodeToString([]byte(`{"zone":"eu-1","weight":3}`))
	java.Call(t, "disc-register /svc billing j1 10.0.0.7 8080 "+payload, "disc-registered j1", 30*time.Second)

	d, _ := goDiscovery(t, cl, "/svc")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names, err := d.QueryForNames(ctx)
	if err != nil || len(names) != 1 || names[0] != "billing" {
		t.Fatalf("names %v, %v", names, err)
	}
	insts, err := d.QueryForInstances(ctx, "billing")
	if err != nil || len(insts) != 1 {
		t.Fatalf("instances %+v, %v", insts, err)
	}
	got := insts[0]
	if got.ID != "j1" || got.Name != "billing" || got.Address != "10.0.0.7" || got.Port == nil || *got.Port != 8080 ||
		got.ServiceType != discovery.Dynamic || got.Disabled || got.RegistrationTimeUTC == 0 {
		t.Fatalf("Curator's instance read as %+v", got)
	}
	// Curator's default serializer types the payload with "@class".
	var pl map[string]any
	if err := json.Unmarshal(got.Payload, &pl); err != nil {
		t.Fatalf("payload %s: %v", got.Payload, err)
	}
	if pl["@class"] != "java.util.HashMap" || pl["zone"] != "eu-1" || pl["weight"] != float64(3) {
		t.Fatalf("payload %s", got.Payload)
	}

	// Go's provider gives it; once Java unregisters it, Go's cache drops it.
	p, err := d.NewProvider("billing")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if inst, err := p.Instance(); err != nil || inst.ID != "j1" {
		t.Fatalf("provider gave %+v, %v", inst, err)
	}
	java.Call(t, "disc-unregister /svc billing j1", "disc-unregistered j1", 30*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := p.Instance(); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Go's provider still gives the instance Curator unregistered")
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}

func TestGoRegisteredInstanceIsFoundByCurator(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	d, _ := goDiscovery(t, cl, "/svc")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inst := discovery.NewInstance("search")
	inst.ID, inst.Address = "g1", "10.0.0.9"
	port := 9200
	inst.Port = &port
	inst.Payload = json.RawMessage(`{"@class":"java.util.HashMap","shard":"2","replicas":[1,2]}`)
	if err := d.Register(ctx, inst); err != nil {
		t.Fatal(err)
	}
	// One Curator registered next to it, and one disabled by Go, which a
	// Curator provider must leave out.
	java.Call(t, "disc-register /svc search j2 10.0.0.10 9201 "+hex.EncodeToString([]byte(`{}`)), "disc-registered j2", 30*time.Second)
	off := discovery.NewInstance("search")
	off.ID, off.Disabled = "g0", true
	if err := d.Register(ctx, off); err != nil {
		t.Fatal(err)
	}

	got := javaQuery(t, java, "/svc", "search")
	if len(got) != 3 || got[0].ID != "g0" || got[1].ID != "g1" || got[2].ID != "j2" {
		t.Fatalf("Curator found %+v", got)
	}
	g1 := got[1]
	if g1.Address != "10.0.0.9" || g1.Port == nil || *g1.Port != 9200 || g1.SSLPort != nil || !g1.Enabled ||
		g1.PayloadClass != "java.util.HashMap" || g1.Payload["shard"] != "2" {
		t.Fatalf("Curator read Go's instance as %+v", g1)
	}
	if got[0].Enabled {
		t.Fatal("Curator read Go's disabled instance as enabled")
	}

	// Curator's provider (round-robin) never gives the disabled one.
	seen := map[string]bool{}
	for range 4 {
		line := java.Call(t, "disc-provide /svc search", "disc-provided search ", 30*time.Second)
		seen[strings.TrimPrefix(line, "disc-provided search ")] = true
	}
	if seen["g0"] || seen["-"] || !seen["g1"] && !seen["j2"] {
		t.Fatalf("Curator's provider gave %v", seen)
	}

	// An update by Go is what Curator reads next.
	inst.Payload = json.RawMessage(`{"@class":"java.util.HashMap","shard":"3"}`)
	if err := d.Update(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if got := javaQuery(t, java, "/svc", "search"); got[1].Payload["shard"] != "3" {
		t.Fatalf("Curator read %+v after Go's update", got[1])
	}
}

// detail is the Go side of the Agent's payload class of its own,
// zkrecipes.Detail (java/Detail.java).
type detail struct {
	Zone   string `json:"zone"`
	Weight int    `json:"weight"`
}

const detailClass = "zkrecipes.Detail"

// typedInstance is one instance as the Agent's disc-typed-query reports it.
type typedInstance struct {
	ID           string          `json:"id"`
	Payload      json.RawMessage `json:"payload"`
	PayloadClass *string         `json:"payloadClass"`
}

// javaTypedQuery queries service name through a Curator ServiceDiscovery
// of payload class class; ok is false when Curator's query threw, and
// failure names the exception.
func javaTypedQuery(t *testing.T, p *curator.Process, base, name, class string) (insts []typedInstance, failure string) {
	t.Helper()
	p.Send("disc-typed-query " + base + " " + name + " " + class)
	for {
		line := p.Expect(t, "disc-typed-", 30*time.Second)
		if rest, ok := strings.CutPrefix(line, "disc-typed-failed "+name+" "); ok {
			return nil, rest
		}
		if rest, ok := strings.CutPrefix(line, "disc-typed-instances "+name+" "); ok {
			raw, err := hex.DecodeString(rest)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if err := json.Unmarshal(raw, &insts); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			return insts, ""
		}
	}
}

// A Go payload made for a Java class of one's own (JavaPayload) is read
// by a Curator ServiceDiscovery<Detail> as a Detail, fields and all.
func TestGoPayloadForAJavaClassIsReadAsThatClassByCurator(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	d, _ := goDiscovery(t, cl, "/svc")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inst := discovery.NewInstance("detail")
	inst.ID = "g1"
	payload, err := discovery.JavaPayload(detailClass, detail{Zone: "eu-1", Weight: 3})
	if err != nil {
		t.Fatal(err)
	}
	inst.Payload = payload
	if err := d.Register(ctx, inst); err != nil {
		t.Fatal(err)
	}
	got, failure := javaTypedQuery(t, java, "/svc", "detail", detailClass)
	if failure != "" || len(got) != 1 || got[0].PayloadClass == nil || *got[0].PayloadClass != detailClass {
		t.Fatalf("Curator's ServiceDiscovery<Detail> read %+v, threw %q", got, failure)
	}
	var read detail
	if err := json.Unmarshal(got[0].Payload, &read); err != nil || read != (detail{Zone: "eu-1", Weight: 3}) {
		t.Fatalf("Curator read the payload as %s (%v)", got[0].Payload, err)
	}
}

// A payload Curator wrote for a class of its own is read by Go: its class
// (PayloadClass) and its fields (DecodePayload).
func TestCuratorPayloadOfAClassOfItsOwnIsReadByGo(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	payload := hex.EncodeToString([]byte(`{"zone":"us-2","weight":5}`))
	java.Call(t, "disc-typed-register /svc detail j1 "+detailClass+" "+payload, "disc-typed-registered j1", 30*time.Second)

	d, _ := goDiscovery(t, cl, "/svc")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inst, ok, err := d.QueryForInstance(ctx, "detail", "j1")
	if err != nil || !ok {
		t.Fatalf("Go found %v, %v", ok, err)
	}
	if inst.PayloadClass() != detailClass {
		t.Fatalf("payload %s: class %q", inst.Payload, inst.PayloadClass())
	}
	var got detail
	if err := inst.DecodePayload(&got); err != nil || got != (detail{Zone: "us-2", Weight: 5}) {
		t.Fatalf("payload %s decoded as %+v (%v)", inst.Payload, got, err)
	}
	// Written back by Go unchanged, Curator still reads it as a Detail.
	inst.ID = "g1"
	if err := d.Register(ctx, inst); err != nil {
		t.Fatal(err)
	}
	back, failure := javaTypedQuery(t, java, "/svc", "detail", detailClass)
	if failure != "" || len(back) != 2 || back[0].PayloadClass == nil || *back[0].PayloadClass != detailClass {
		t.Fatalf("Curator read %+v, threw %q", back, failure)
	}
}

// Which payload JSON each common Java payload class reads, as the
// package documentation of discovery says: a payload the reader's class
// cannot read fails Curator's whole query of the service, not only its
// instance.
func TestWhichPayloadEachJavaPayloadClassReads(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	d, _ := goDiscovery(t, cl, "/svc")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mustJava := func(class string, v any) json.RawMessage {
		b, err := discovery.JavaPayload(class, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	payloads := map[string]json.RawMessage{
		"null":    nil,
		"string":  json.RawMessage(`"eu-1"`),
		"number":  json.RawMessage(`3`),
		"boolean": json.RawMessage(`true`),
		"object":  json.RawMessage(`{"zone":"eu-1"}`),
		"hashmap": mustJava("java.util.HashMap", map[string]string{"zone": "eu-1"}),
		"detail":  mustJava(detailClass, detail{Zone: "eu-1", Weight: 3}),
		"array":   json.RawMessage(`[1]`),
	}
	for svc, p := range payloads {
		inst := discovery.NewInstance(svc)
		inst.Payload = p
		if err := d.Register(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	reads := map[string][]string{
		"java.lang.Object": {"null", "string", "number", "boolean", "object", "hashmap", "detail"},
		"java.util.Map":    {"null", "object", "hashmap"},
		"java.lang.String": {"null", "string"},
		detailClass:        {"null", "detail"},
		"java.lang.Void":   {"null"},
	}
	for class, ok := range reads {
		for svc := range payloads {
			want := slices.Contains(ok, svc)
			got, failure := javaTypedQuery(t, java, "/svc", svc, class)
			if want && (failure != "" || len(got) != 1) {
				t.Errorf("%s does not read a %s payload (%s): %+v, %s", class, svc, payloads[svc], got, failure)
			}
			if !want && failure == "" {
				t.Errorf("%s reads a %s payload (%s): %+v", class, svc, payloads[svc], got)
			}
		}
	}
}
