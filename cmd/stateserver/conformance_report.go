package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/infrastate/backend-operator/internal/conformance"
)

// report is what the conformance subcommand prints.
type report struct {
	target string // the URL, printable
	state  string // which state was checked, and what became of it
	result conformance.Result
	err    error
}

// print writes the report (see render) to w.
func (r report) print(w io.Writer) error {
	_, err := io.WriteString(w, r.render())
	return err
}

// render is the report: what the server does, what the operator's lock
// features do there, and the requests sent. A check that did not complete
// gets the requests and the reason only.
func (r report) render() string {
	w := &strings.Builder{}
	fmt.Fprintf(w, "Conformance of %s\non %s\n", r.target, r.state)
	if r.result.Complete {
		b := r.result.Behaviour
		section(w, "What the server does", serverRows(b))
		section(w, "What the operator's lock features do", featureRows(conformance.Decide(b)))
	}
	var steps [][2]string
	for _, s := range r.result.Steps {
		answer := "no answer"
		if s.Status != 0 {
			answer = fmt.Sprintf("%d", s.Status)
		}
		steps = append(steps, [2]string{s.Request, strings.TrimSuffix(answer+" "+s.Outcome, " ")})
	}
	section(w, "Requests sent", steps)
	if r.err != nil {
		fmt.Fprintf(w, "\nThe check did not complete: %v\n", r.err)
	}
	return w.String()
}

// section writes a title and its rows as two aligned columns.
func section(w *strings.Builder, title string, rows [][2]string) {
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		_, _ = fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1]) // writes to w, which cannot fail
	}
	_ = tw.Flush() // writes to w, which cannot fail
}

// serverRows describe a Behaviour.
func serverRows(b conformance.Behaviour) [][2]string {
	rows := [][2]string{{"a LOCK while locked", conflictText(b)}}
	if b.HolderInConflicts {
		rows = append(rows, [2]string{"the conflict's fields", fieldsText(b)})
	}
	if !b.LocksExclusive {
		return rows
	}
	reentrant := "refused: not re-entrant"
	if b.ReentrantLock {
		reentrant = "granted: re-entrant"
	}
	wrongID := "refused for its form: whether the server checks IDs is not known"
	switch {
	case b.UnlockChecksID:
		wrongID = "refused: the server checks the ID"
	case b.UnlockIgnoresBody:
		wrongID = "released the lock: any UNLOCK releases any lock"
	}
	rows = append(rows,
		[2]string{"a LOCK again under the holder's ID", reentrant},
		[2]string{"an UNLOCK naming another ID", wrongID})
	for _, body := range []conformance.UnlockBody{conformance.BodyExact, conformance.BodyID, conformance.BodyEmpty} {
		rows = append(rows, [2]string{"an UNLOCK with the " + bodyName(body), releaseText(b, body)})
	}
	created := "not known: the state existed"
	if b.LockCreatesState != nil {
		created = map[bool]string{true: "creates it (a GET then answers it exists)", false: "does not create it"}[*b.LockCreatesState]
	}
	return append(rows, [2]string{"a LOCK of a missing state", created})
}

func conflictText(b conformance.Behaviour) string {
	switch {
	case !b.LocksExclusive:
		return "granted: the server does not lock"
	case b.HolderInConflicts:
		return fmt.Sprintf("%d %s, naming the holder", b.ConflictStatus, http.StatusText(b.ConflictStatus))
	}
	return fmt.Sprintf("%d %s, naming no holder", b.ConflictStatus, http.StatusText(b.ConflictStatus))
}

// fieldsText groups the conflict's keys by whose value they carry.
func fieldsText(b conformance.Behaviour) string {
	groups := map[conformance.FieldSource][]string{}
	for _, key := range conformance.LockInfoKeys {
		src := b.ConflictFields[key]
		groups[src] = append(groups[src], key)
	}
	var parts []string
	for _, g := range []struct {
		src  conformance.FieldSource
		name string
	}{{conformance.FieldHolder, "the holder's"}, {conformance.FieldServer, "the server's own"}, {conformance.FieldRequester, "the requester's, echoed"}} {
		if keys := groups[g.src]; len(keys) > 0 {
			parts = append(parts, strings.Join(keys, ", ")+": "+g.name)
		}
	}
	text := strings.Join(parts, "; ")
	if b.HolderVerbatim {
		text += " (the holder's LockInfo byte for byte)"
	}
	return text
}

func releaseText(b conformance.Behaviour, body conformance.UnlockBody) string {
	status, ok := b.UnlockStatuses[body]
	switch {
	case !ok:
		return "not tried"
	case b.Releases(body):
		return fmt.Sprintf("%d: released", status)
	}
	return fmt.Sprintf("%d %s: refused", status, http.StatusText(status))
}

// featureRows describe what Decide said of each feature.
func featureRows(f conformance.Features) [][2]string {
	return [][2]string{
		{"probe.lockCheck", lockCheckText(f.LockCheck)},
		{"StateLock: is the lock still its own?", ownershipText(f.Ownership)},
		{"StateLock: release", releasePlanText(f.Release)},
		{"forceUnlock", namedText(f.ForceUnlock)},
		{"lockPolicy.releaseWhenHolderGone", namedText(f.ReleaseWhenHolderGone)},
		{"terraform force-unlock", strings.TrimPrefix(f.ForceUnlock.Terraform, "terraform force-unlock ")},
		{"tofu force-unlock", strings.TrimPrefix(f.ForceUnlock.OpenTofu, "tofu force-unlock ")},
	}
}

func lockCheckText(p conformance.LockCheckPlan) string {
	if !p.Allowed {
		return "refused: " + p.Reason
	}
	text := "runs, releasing its lock with the " + bodyName(p.Body)
	if p.HolderKnown {
		text += "; shows the holder's " + strings.Join(p.HolderFields, ", ")
	} else {
		text += "; " + p.Reason
	}
	if p.SkipWhenStateAbsent {
		text += "; skipped while no state exists, which a LOCK may create"
	}
	return text
}

func ownershipText(p conformance.OwnershipPlan) string {
	switch p.By {
	case conformance.OwnershipByHolder:
		return "checked by the holder a conflict names"
	case conformance.OwnershipByReentrantLock:
		return "checked by a LOCK again under its own ID"
	}
	return "cannot be checked (Locked is Unknown): " + p.Reason
}

func releasePlanText(p conformance.ReleasePlan) string {
	if !p.Allowed {
		return "refused: " + p.Reason
	}
	text := "the " + bodyName(p.Body)
	switch p.Guard {
	case conformance.GuardHolderRead:
		text += ", only right after a conflict names its lock as the holder"
	case conformance.GuardReentrantLock:
		text += ", only right after a LOCK again under its own ID succeeds"
	case conformance.GuardNoLossSeen:
		text += ", only while nothing showed its lock was lost"
	}
	return text
}

func namedText(p conformance.NamedUnlockPlan) string {
	if !p.Allowed {
		return "refused: " + p.Reason
	}
	text := "the " + bodyName(p.Body)
	if p.Body == conformance.BodyExact {
		text = "the holder's LockInfo as the conflict carried it"
	}
	if p.NeedsHolderRead {
		text += ", right after a conflict names the lock"
	}
	return text
}

func bodyName(b conformance.UnlockBody) string {
	switch b {
	case conformance.BodyExact:
		return "exact LockInfo"
	case conformance.BodyID:
		return "ID-only body"
	}
	return "empty body"
}
