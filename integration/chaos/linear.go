package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// lockInput is one operation on the lock model.
type lockInput struct {
	acquire bool
	client  string
	mode    string // "r", "w" or "" (exclusive for the mutex and leaders, one lease for the semaphore)
}

// lockModel is the sequential specification every recipe must look like: a
// set of holders where an acquire is allowed only when it fits (one holder;
// one writer or any readers; at most capacity leases) and a release only by
// a holder. The state is the sorted "client:mode" list, so states compare
// with ==.
func lockModel(recipe Recipe, capacity int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return "" },
		Step: func(state, input, _ any) (bool, any) {
			in := input.(lockInput)
			holders := splitState(state.(string))
			me := in.client + ":" + in.mode
			i := slices.Index(holders, me)
			if !in.acquire {
				if i < 0 {
					return false, state
				}
				return true, strings.Join(slices.Delete(holders, i, i+1), ",")
			}
			if i >= 0 {
				return false, state
			}
			for _, h := range holders {
				_, mode, _ := strings.Cut(h, ":")
				if recipe.exclusive(in.mode) || recipe.exclusive(mode) {
					return false, state
				}
			}
			if recipe == Semaphore && len(holders) >= capacity {
				return false, state
			}
			holders = append(holders, me)
			slices.Sort(holders)
			return true, strings.Join(holders, ",")
		},
		DescribeOperation: func(input, _ any) string {
			in := input.(lockInput)
			verb := "release"
			if in.acquire {
				verb = "acquire"
			}
			if in.mode != "" {
				return fmt.Sprintf("%s(%s)", verb, in.mode)
			}
			return verb
		},
		DescribeState: func(state any) string {
			if state.(string) == "" {
				return "free"
			}
			return state.(string)
		},
	}
}

func splitState(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// checkLinearizable runs porcupine over the holds: an acquire takes effect
// somewhere between the ask and the grant (Hold.Granted; a latch's term
// may be granted before the Await that returns it), a release somewhere
// between the end of trust and the release's return.
func (r *Report) checkLinearizable(recipe Recipe, capacity int) {
	ids := map[string]int{}
	var ops []porcupine.Operation
	for _, h := range r.Holds {
		id, ok := ids[h.Client]
		if !ok {
			id = len(ids)
			ids[h.Client] = id
		}
		ops = append(ops,
			porcupine.Operation{ClientId: id, Input: lockInput{true, h.Client, h.Mode}, Call: min(h.Call, h.Granted), Return: h.Granted},
			porcupine.Operation{ClientId: id, Input: lockInput{false, h.Client, h.Mode}, Call: h.End, Return: h.Returned})
	}
	r.model = lockModel(recipe, capacity)
	r.Linearizable, r.info = porcupine.CheckOperationsVerbose(r.model, ops, time.Minute)
	switch r.Linearizable {
	case porcupine.Illegal:
		r.violate("not-linearizable", "the history does not fit the %s model (see the visualisation)", recipe)
	case porcupine.Unknown:
		r.violate("not-linearizable", "porcupine gave up after a minute")
	}
}

// annotate adds the faults to the visualisation, as bands over the clients
// they hit (or all, for servers).
func (r *Report) annotate(events []Event) {
	var notes []porcupine.Annotation
	for _, e := range events {
		switch e.Kind {
		case KindFault, KindKill, KindStop, KindCont, KindMinority, KindSteer:
			notes = append(notes, porcupine.Annotation{Tag: "nemesis", Start: e.T, Description: string(e.Kind) + " " + e.Client, Details: e.Detail})
		case KindWrite:
			if !e.Accepted {
				notes = append(notes, porcupine.Annotation{Tag: "fence", Start: e.T, Description: "refused " + e.Client, Details: fmt.Sprint("token ", e.Token), BackgroundColor: "#f4b6b6"})
			}
		}
	}
	r.info.AddAnnotations(notes)
}
