package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// defaultServicesBase is where zkr services looks without --base: the
// base path of Curator's discovery examples.
const defaultServicesBase = "/services"

const servicesHelp = `NAME
    zkr services - show the services and instances of service discovery

SYNOPSIS
    zkr services [--base PATH] [--watch] [-o json] [OPTIONS] [NAME]

DESCRIPTION
    Shows what Apache Curator's curator-x-discovery (and this module's
    recipes/discovery) registered under the base path (--base,
    default /services): without NAME, the names of the services, one a
    line; with NAME, that service's instances, a line each, sorted by id:

    ID        the instance's id.
    ADDRESS   its address, then :PORT if it has a port.
    SSLPORT   its SSL port, or -.
    TYPE      DYNAMIC (gone with its process's session), STATIC or
              PERMANENT.
    ENABLED   whether providers may pick it.
    PAYLOAD   its payload's JSON, as stored.

    zkr services only looks: it registers nothing. A base path or service
    that does not exist is said so on stderr, with status 1, as ls does of
    a missing file; one with nothing registered is an empty list (0).
    --watch follows a missing one until it appears. A service whose nodes
    are not instances (their data is not Curator's instance JSON) is
    refused (status 2).

    With --watch, zkr prints a line per service (added) or instance
    (registered) there, then one per change, until a signal stops it:

    added        NAME      a service appeared      (without NAME)
    removed      NAME      a service went
    registered   ID ADDRESS  an instance appeared  (with NAME)
    updated      ID ADDRESS  an instance was updated
    unregistered ID ADDRESS  an instance went (its process's session
                             ended, or it unregistered)

    When the view may be stale (zkr's link to ZooKeeper down, its
    session lost), zkr says so on stderr, and again once it is current,
    as zkr ls --watch. It watches, it never polls.

OPTIONS
    --base PATH
           the discovery's base path (Curator's basePath); default
           /services.
    -w, --watch
           print the services or instances, then every change, until
           stopped by a signal.
` + outputHelp + `           For zkr services, one object: {"base":..,"services":[names]},
           or with NAME {"base":..,"name":..,"instances":[INSTANCE,..]},
           INSTANCE being the instance's JSON as Curator writes it (name,
           id, address, port, sslPort, payload, registrationTimeUTC,
           serviceType, uriSpec, enabled). With --watch, one object per
           change: {"event":"added"|"removed","time":..,"name":..}, or
           {"event":"registered"|"updated"|"unregistered","time":..,
            "instance":INSTANCE}.

GLOBAL OPTIONS
` + globalOptionsHelp + `
EXIT STATUS
    0      shown (none too).
    1      the base path, or NAME, does not exist (not with --watch):
           nothing printed, a line on stderr.
    2      Usage error (nothing was contacted), or NAME's nodes are not
           instances: nothing printed.
    125    zkr failed: no connection to ZooKeeper, or a ZooKeeper error.
    129, 130, 143
           SIGHUP, SIGINT (Ctrl-C) or SIGTERM: interrupted, or (--watch)
           stopped, which is how --watch ends.

ENVIRONMENT
` + globalEnvHelp + `    ZKR_OUTPUT           default for -o/--output (text or json).

EXAMPLES
    $ zkr services
    billing
    search
    $ zkr services billing
    ID                                    ADDRESS         SSLPORT  TYPE     ENABLED  PAYLOAD
    5c3f2a0e-8d6b-4f0e-9d1e-2b7c4a9e6f10  10.0.0.7:8080   -        DYNAMIC  true     null
    $ zkr services --watch billing               # instances come and go
    $ zkr services -o json billing | jq -r '.instances[] | "\(.address):\(.port)"'
`

func runServices(a *app, g *globals, args []string) int {
	base := defaultServicesBase
	lc, code, ok := a.openLookSpec("services", servicesHelp, g, args, lookSpec{
		optional: true,
		flags:    func(fs *flag.FlagSet) { fs.StringVar(&base, "base", base, "") },
		validate: func() error {
			if err := checkPath(base); err != nil {
				return fmt.Errorf("--base %q: not a valid ZooKeeper path (absolute, no trailing or double slash, no . or ..)", base)
			}
			return nil
		},
		check: func(name string) error {
			if name == "" {
				return nil
			}
			if strings.Contains(name, "/") || framework.ValidatePath("/"+name) != nil {
				return fmt.Errorf("NAME %q: not a service name (one path segment, no slash)", name)
			}
			return nil
		},
	})
	if !ok {
		return code
	}
	defer lc.close()
	if lc.path == "" {
		return listServices(a, lc, base)
	}
	return listInstances(a, lc, base, lc.path)
}

// listServices shows the names under base.
func listServices(a *app, lc *lookCommand, base string) int {
	if !lc.watch {
		if code, ok := lc.present(base, base+" does not exist: no service is registered under it"); !ok {
			return code
		}
	}
	c, code, ok := lc.startCache(base, cache.Children(), cache.WithoutData())
	if !ok {
		return code
	}
	defer func() { _ = c.Close() }()
	asJSON := lc.out.json()
	if lc.watch {
		d := &childDiff{appeared: "added", went: "removed", emit: func(event string, n cache.Node) error {
			if asJSON {
				return writeJSON(a.stdout, serviceEventJSON{Event: event, Time: now(), Name: framework.Base(n.Path)})
			}
			_, err := fmt.Fprintf(a.stdout, "%-7s %s\n", event, framework.Base(n.Path))
			return err
		}}
		return lc.follow(c, "the service list", d.event)
	}
	nodes, err := c.Children(base)
	if err != nil {
		return lc.sig.failed(lc.log, err)
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = framework.Base(n.Path)
	}
	if asJSON {
		err = writeJSON(a.stdout, servicesJSON{Base: base, Services: names})
	} else if len(names) > 0 {
		_, err = fmt.Fprintln(a.stdout, strings.Join(names, "\n"))
	}
	if err != nil {
		return lc.sig.failed(lc.log, err)
	}
	return 0
}

// listInstances shows the instances of service name.
func listInstances(a *app, lc *lookCommand, base, name string) int {
	path := framework.Join(base, name)
	if !lc.watch {
		if code, ok := lc.present(path, fmt.Sprintf("no service %s under %s (%s does not exist)", name, base, path)); !ok {
			return code
		}
	}
	c, code, ok := lc.startCache(path, cache.Children())
	if !ok {
		return code
	}
	defer func() { _ = c.Close() }()
	nodes, err := c.Children(path)
	if err != nil {
		return lc.sig.failed(lc.log, err)
	}
	insts := make([]discovery.Instance, len(nodes))
	for i, n := range nodes {
		if insts[i], err = decodeInstance(n); err != nil {
			lc.log.printf("%s is not a service: %v", path, err)
			return exitUsage
		}
	}
	asJSON := lc.out.json()
	if lc.watch {
		d := &childDiff{appeared: "registered", changed: "updated", went: "unregistered", emit: func(event string, n cache.Node) error {
			inst, err := decodeInstance(n)
			if err != nil {
				lc.log.printf("%v", err) // not an instance: nothing to show
				return nil
			}
			if asJSON {
				return writeJSON(a.stdout, instanceEventJSON{Event: event, Time: now(), Instance: inst})
			}
			_, err = fmt.Fprintf(a.stdout, "%-12s %s %s\n", event, inst.ID, address(inst))
			return err
		}}
		return lc.follow(c, "the instance list", d.event)
	}
	if asJSON {
		err = writeJSON(a.stdout, instancesJSON{Base: base, Name: name, Instances: insts})
	} else if len(insts) > 0 {
		err = instanceTable(a.stdout, insts)
	}
	if err != nil {
		return lc.sig.failed(lc.log, err)
	}
	return 0
}

// decodeInstance reads an instance's node, as Curator's
// JsonInstanceSerializer wrote it.
func decodeInstance(n cache.Node) (discovery.Instance, error) {
	var inst discovery.Instance
	if err := json.Unmarshal(n.Data, &inst); err != nil {
		return inst, fmt.Errorf("its node %s holds no instance's JSON (%v)", framework.Base(n.Path), err)
	}
	return inst, nil
}

// address is an instance's address, with :port if it has one.
func address(inst discovery.Instance) string {
	addr := inst.Address
	if addr == "" {
		addr = "-"
	}
	if inst.Port != nil {
		addr += ":" + strconv.Itoa(*inst.Port)
	}
	return addr
}

func instanceTable(w io.Writer, insts []discovery.Instance) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tSSLPORT\tTYPE\tENABLED\tPAYLOAD")
	for _, inst := range insts {
		ssl := "-"
		if inst.SSLPort != nil {
			ssl = strconv.Itoa(*inst.SSLPort)
		}
		typ := inst.ServiceType
		if typ == "" {
			typ = discovery.Dynamic
		}
		payload := "null"
		if len(inst.Payload) > 0 {
			payload = string(inst.Payload)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\n", printable(inst.ID), printable(address(inst)), ssl, typ, !inst.Disabled, payload)
	}
	return tw.Flush()
}

type servicesJSON struct {
	Base     string   `json:"base"`
	Services []string `json:"services"`
}

type instancesJSON struct {
	Base      string               `json:"base"`
	Name      string               `json:"name"`
	Instances []discovery.Instance `json:"instances"`
}

type serviceEventJSON struct {
	Event string `json:"event"`
	Time  string `json:"time"`
	Name  string `json:"name"`
}

type instanceEventJSON struct {
	Event    string             `json:"event"`
	Time     string             `json:"time"`
	Instance discovery.Instance `json:"instance"`
}
