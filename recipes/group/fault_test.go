package group_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A member cut off every way in turn, for less than its session timeout,
// stays a member throughout (its session lives), and its view takes in
// the member that joined meanwhile once the link is back. Its watches are
// set again on a reconnect, where go-zookeeper v1.0.4 races.
func TestMembershipOutlastsLinkFaultsWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	cl := zktest.Standalone(t)
	for name, fault := range map[string]func(p *zktest.Proxy){
		"cut":              func(p *zktest.Proxy) { p.Cut() },
		"blackhole":        func(p *zktest.Proxy) { p.Blackhole() },
		"replies-dropped":  func(p *zktest.Proxy) { p.DropReplies() },
		"requests-dropped": func(p *zktest.Proxy) { p.DropRequests() },
	} {
		t.Run(name, func(t *testing.T) {
			path := "/groups/fault-" + name
			p := cl.NewProxy()
			m := join(t, newClient(t, p.Addrs()), path, "m", "pm")
			o := join(t, newClient(t, cl.Addrs()), path, "o", "po")
			waitMembers(t, m, map[string]string{"m": "pm", "o": "po"})
			fault(p)
			join(t, newClient(t, cl.Addrs()), path, "n", "pn")
			waitMembers(t, o, map[string]string{"m": "pm", "o": "po", "n": "pn"})
			p.Heal()
			waitMembers(t, m, map[string]string{"m": "pm", "o": "po", "n": "pn"})
			waitMembers(t, o, map[string]string{"m": "pm", "o": "po", "n": "pn"})
		})
	}
}

// Across a server restart every member is back in every view, and one
// that joins after it is seen.
func TestMembershipOutlastsAServerRestartWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	cl := zktest.Standalone(t)
	m := join(t, newClient(t, cl.Addrs()), "/groups/restart", "m", "pm")
	o := join(t, newClient(t, cl.Addrs()), "/groups/restart", "o", "po")
	waitMembers(t, m, map[string]string{"m": "pm", "o": "po"})
	cl.Server(1).Restart()
	join(t, newClient(t, cl.Addrs()), "/groups/restart", "n", "pn")
	waitMembers(t, m, map[string]string{"m": "pm", "o": "po", "n": "pn"})
	waitMembers(t, o, map[string]string{"m": "pm", "o": "po", "n": "pn"})
}
