package curator_test

// Interop with the real curator-x-discovery 5.4 (Debian's
// libcurator-discovery-java): an instance registered by Java is found by
// Go's discovery, and one registered by Go is found, and provided, by
// Java's, payloads included, on the same base path.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/curator"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
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
