package conformance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// verdict is what Decide says of each feature, in a few words.
type verdict struct {
	LockCheck    string
	HolderFields []string
	SkipAbsent   bool
	Ownership    Ownership
	Release      string
	// RefusalNotHeld is Release.RefusalMeansNotHeld.
	RefusalNotHeld bool
	ForceUnlock    string
	HolderGone     string
}

func verdictOf(f Features) verdict {
	v := verdict{
		LockCheck: "refused", HolderFields: f.LockCheck.HolderFields, SkipAbsent: f.LockCheck.SkipWhenStateAbsent,
		Ownership: f.Ownership.By, Release: "refused", RefusalNotHeld: f.Release.RefusalMeansNotHeld,
		ForceUnlock: named(f.ForceUnlock), HolderGone: named(f.ReleaseWhenHolderGone),
	}
	if f.LockCheck.Allowed {
		v.LockCheck = "release " + string(f.LockCheck.Body)
	}
	if f.Release.Allowed {
		v.Release = string(f.Release.Body) + ", guard " + string(f.Release.Guard)
	}
	return v
}

func named(p NamedUnlockPlan) string {
	switch {
	case !p.Allowed:
		return "refused"
	case p.NeedsHolderRead:
		return string(p.Body) + " after a holder read"
	}
	return string(p.Body)
}

// TestDecide checks what Decide makes of the behaviour of each kind of
// server (kinds, which TestCheckModes learns from the reference server),
// and of behaviours no mode has.
func TestDecide(t *testing.T) {
	every := []string{"ID", "Operation", "Info", "Who", "Version", "Created", "Path"}
	withHolder := verdict{LockCheck: "release exact", HolderFields: every, Ownership: OwnershipByHolder,
		Release: "exact, guard none", RefusalNotHeld: true, ForceUnlock: "id", HolderGone: "id after a holder read"}
	noHolder := verdict{LockCheck: "release exact", Ownership: OwnershipUnknown,
		Release: "exact, guard none", RefusalNotHeld: true, ForceUnlock: "id", HolderGone: "refused"}
	// Where the server does not check the ID an UNLOCK names, or does not
	// release on the ID alone, a refused UNLOCK says nothing of whose the
	// lock is.
	refusalTellsNothing := func(v *verdict) { v.RefusalNotHeld = false }
	with := func(v verdict, change func(*verdict)) verdict { change(&v); return v }
	exactAfterRead := func(v *verdict) {
		v.ForceUnlock, v.HolderGone = "exact after a holder read", "exact after a holder read"
	}
	want := map[string]verdict{
		"423 with the holder":         withHolder,
		"409 with the holder":         withHolder,
		"409 plain text":              noHolder,
		"423 plain text":              noHolder,
		"re-entrant LOCK":             withHolder,
		"re-entrant LOCK, plain text": with(noHolder, func(v *verdict) { v.Ownership = OwnershipByReentrantLock }),
		"UNLOCK ignores its body": with(withHolder, func(v *verdict) {
			v.Release = "exact, guard holder-read"
			exactAfterRead(v)
			refusalTellsNothing(v)
		}),
		"UNLOCK ignores its body, plain text": with(noHolder, func(v *verdict) {
			v.Release, v.ForceUnlock = "exact, guard no-loss-seen", "refused"
			refusalTellsNothing(v)
		}),
		"UNLOCK needs the exact body": with(withHolder, func(v *verdict) { exactAfterRead(v); refusalTellsNothing(v) }),
		"empty force unlock only":     with(withHolder, func(v *verdict) { exactAfterRead(v); refusalTellsNothing(v) }),
		"ID force unlock only":        withHolder,
		"no force unlock, plain text": with(noHolder, func(v *verdict) { v.ForceUnlock = "refused"; refusalTellsNothing(v) }),
		"GitLab": with(withHolder, func(v *verdict) {
			v.HolderFields, v.SkipAbsent, v.HolderGone = []string{"ID", "Who", "Created"}, true, "refused"
		}),
	}
	cases := map[string]Behaviour{}
	for name, k := range kinds() {
		cases[name] = k.behaviour
	}
	holderFields := map[string]FieldSource{}
	for _, key := range every {
		holderFields[key] = FieldHolder
	}
	refused := verdict{LockCheck: "refused", Ownership: OwnershipUnknown, Release: "refused", ForceUnlock: "refused", HolderGone: "refused"}
	synthetic := map[string]struct {
		b    Behaviour
		want verdict
	}{
		"nothing seen": {Behaviour{}, refused},
		"a second LOCK granted": {Behaviour{UnlockChecksID: true, UnlockBodies: []UnlockBody{BodyExact, BodyID, BodyEmpty}},
			refused},
		"holder, ID check unknown, only the empty body releases": {
			Behaviour{LocksExclusive: true, HolderInConflicts: true, ConflictFields: holderFields, UnlockBodies: []UnlockBody{BodyEmpty}},
			verdict{LockCheck: "release empty", HolderFields: every, SkipAbsent: true, Ownership: OwnershipByHolder,
				Release: "empty, guard holder-read", ForceUnlock: "empty after a holder read", HolderGone: "empty after a holder read"},
		},
		"no holder, ID check unknown": {
			Behaviour{LocksExclusive: true, UnlockBodies: []UnlockBody{BodyExact, BodyID}, LockCreatesState: new(false)},
			verdict{LockCheck: "release exact", Ownership: OwnershipUnknown, Release: "exact, guard no-loss-seen", ForceUnlock: "refused", HolderGone: "refused"},
		},
		"holder, nothing releases": {
			Behaviour{LocksExclusive: true, HolderInConflicts: true, ConflictFields: holderFields, UnlockChecksID: true},
			verdict{LockCheck: "refused", SkipAbsent: false, Ownership: OwnershipByHolder, Release: "refused", ForceUnlock: "refused", HolderGone: "refused"},
		},
	}
	for name, tc := range synthetic {
		cases[name], want[name] = tc.b, tc.want
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("no verdict for %q", name)
			}
			if diff := cmp.Diff(w, verdictOf(Decide(b))); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideReasons checks the sentences that tell a user why a feature
// is refused and what terraform and tofu force-unlock do instead.
func TestDecideReasons(t *testing.T) {
	k := kinds()
	cases := map[string]struct {
		b    Behaviour
		pick func(Features) NamedUnlockPlan
		want NamedUnlockPlan
	}{
		"forceUnlock where any UNLOCK releases any lock and conflicts name no holder": {
			b: k["UNLOCK ignores its body, plain text"].behaviour, pick: func(f Features) NamedUnlockPlan { return f.ForceUnlock },
			want: NamedUnlockPlan{
				Reason:    "the server releases any lock on any UNLOCK and its conflicts name no holder: the operator cannot tell that the lock held is the named one",
				Terraform: "terraform force-unlock sends an empty body, which releases whatever lock is held, without checking the ID",
				OpenTofu:  "tofu force-unlock (OpenTofu 1.10+) sends the ID-only body, which releases whatever lock is held",
			},
		},
		"forceUnlock where only the exact body releases and conflicts name no holder": {
			b: k["no force unlock, plain text"].behaviour, pick: func(f Features) NamedUnlockPlan { return f.ForceUnlock },
			want: NamedUnlockPlan{
				Reason:    "the server's conflicts name no holder, and it releases a lock only with the exact LockInfo, which the operator cannot send for a lock it did not take",
				Terraform: "terraform force-unlock sends an empty body, which the server refuses (HTTP 500 Internal Server Error)",
				OpenTofu:  "tofu force-unlock (OpenTofu 1.10+) sends the ID-only body, which the server refuses (HTTP 400 Bad Request)",
			},
		},
		"releaseWhenHolderGone on GitLab": {
			b: k["GitLab"].behaviour, pick: func(f Features) NamedUnlockPlan { return f.ReleaseWhenHolderGone },
			want: NamedUnlockPlan{
				Reason:    "the server's conflicts carry a Who of its own (such as GitLab's user name), not the holder's: no Pod can be named",
				Terraform: "terraform force-unlock sends an empty body, which releases whatever lock is held, without checking the ID",
				OpenTofu:  "tofu force-unlock (OpenTofu 1.10+) sends the ID-only body, which releases the named lock only",
			},
		},
		"forceUnlock on an exact-body server": {
			b: k["UNLOCK needs the exact body"].behaviour, pick: func(f Features) NamedUnlockPlan { return f.ForceUnlock },
			want: NamedUnlockPlan{
				Allowed: true, Body: BodyExact, NeedsHolderRead: true,
				Reason:    "the server releases a lock on its exact LockInfo, which its conflicts carry byte for byte: it is sent back right after a conflict named the lock",
				Terraform: "terraform force-unlock sends an empty body, which the server refuses (HTTP 409 Conflict)",
				OpenTofu:  "tofu force-unlock (OpenTofu 1.10+) sends the ID-only body, which the server refuses (HTTP 409 Conflict)",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.pick(Decide(tc.b))); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
