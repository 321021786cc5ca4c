package conformance

import "github.com/infrastate/backend-operator/internal/stateserver"

// kind is a kind of state server: the reference server's options that
// make it one, and the Behaviour Check learns from it.
type kind struct {
	gitlab    bool
	opts      []stateserver.Option
	behaviour Behaviour
}

// kinds are the kinds of servers PROTOCOL.md's "How real servers differ"
// describes, as reference server modes; TestCheckModes checks that Check
// learns each behaviour, TestDecide what Decide makes of it.
func kinds() map[string]kind {
	allHolder := map[string]FieldSource{"ID": FieldHolder, "Operation": FieldHolder, "Info": FieldHolder, "Who": FieldHolder,
		"Version": FieldHolder, "Created": FieldHolder, "Path": FieldHolder}
	all200 := map[UnlockBody]int{BodyExact: 200, BodyID: 200, BodyEmpty: 200}
	allBodies := []UnlockBody{BodyExact, BodyID, BodyEmpty}
	holder := func(status int) Behaviour {
		return Behaviour{LocksExclusive: true, ConflictStatus: status, HolderInConflicts: true, ConflictFields: allHolder,
			HolderVerbatim: true, UnlockChecksID: true, UnlockBodies: allBodies, UnlockStatuses: all200, LockCreatesState: new(false)}
	}
	text := func(status int) Behaviour {
		return Behaviour{LocksExclusive: true, ConflictStatus: status, UnlockChecksID: true, UnlockBodies: allBodies,
			UnlockStatuses: all200, LockCreatesState: new(false)}
	}
	with := func(b Behaviour, change func(*Behaviour)) Behaviour { change(&b); return b }
	return map[string]kind{
		"423 with the holder": {behaviour: holder(423)},
		"409 with the holder": {opts: []stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictHolder409)}, behaviour: holder(409)},
		"409 plain text":      {opts: []stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictText409)}, behaviour: text(409)},
		"423 plain text":      {opts: []stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictText423)}, behaviour: text(423)},
		"re-entrant LOCK": {opts: []stateserver.Option{stateserver.WithReentrantLock()},
			behaviour: with(holder(423), func(b *Behaviour) { b.ReentrantLock = true })},
		"re-entrant LOCK, plain text": {opts: []stateserver.Option{stateserver.WithReentrantLock(), stateserver.WithConflictAnswer(stateserver.ConflictText423)},
			behaviour: with(text(423), func(b *Behaviour) { b.ReentrantLock = true })},
		"UNLOCK ignores its body": {opts: []stateserver.Option{stateserver.WithUnlockCheck(stateserver.UnlockIgnoresBody)},
			behaviour: with(holder(423), func(b *Behaviour) { b.UnlockChecksID, b.UnlockIgnoresBody = false, true })},
		"UNLOCK ignores its body, plain text": {
			opts:      []stateserver.Option{stateserver.WithUnlockCheck(stateserver.UnlockIgnoresBody), stateserver.WithConflictAnswer(stateserver.ConflictText409)},
			behaviour: with(text(409), func(b *Behaviour) { b.UnlockChecksID, b.UnlockIgnoresBody = false, true })},
		"UNLOCK needs the exact body": {opts: []stateserver.Option{stateserver.WithUnlockCheck(stateserver.UnlockExactBody)},
			behaviour: with(holder(423), func(b *Behaviour) {
				b.UnlockBodies, b.UnlockStatuses = []UnlockBody{BodyExact}, map[UnlockBody]int{BodyExact: 200, BodyID: 409, BodyEmpty: 409}
			})},
		"empty force unlock only": {opts: []stateserver.Option{stateserver.WithUnlockBodies(stateserver.AcceptEmptyUnlock)},
			behaviour: with(holder(423), func(b *Behaviour) {
				b.UnlockBodies, b.UnlockStatuses = []UnlockBody{BodyExact, BodyEmpty}, map[UnlockBody]int{BodyExact: 200, BodyID: 400, BodyEmpty: 200}
			})},
		"ID force unlock only": {opts: []stateserver.Option{stateserver.WithUnlockBodies(stateserver.AcceptIDUnlock)},
			behaviour: with(holder(423), func(b *Behaviour) {
				b.UnlockBodies, b.UnlockStatuses = []UnlockBody{BodyExact, BodyID}, map[UnlockBody]int{BodyExact: 200, BodyID: 200, BodyEmpty: 500}
			})},
		"no force unlock, plain text": {
			opts: []stateserver.Option{stateserver.WithUnlockBodies(stateserver.AcceptNoForceUnlock), stateserver.WithConflictAnswer(stateserver.ConflictText423)},
			behaviour: with(text(423), func(b *Behaviour) {
				b.UnlockBodies, b.UnlockStatuses = []UnlockBody{BodyExact}, map[UnlockBody]int{BodyExact: 200, BodyID: 400, BodyEmpty: 500}
			})},
		"GitLab": {gitlab: true, behaviour: Behaviour{
			LocksExclusive: true, ConflictStatus: 409, HolderInConflicts: true,
			ConflictFields: map[string]FieldSource{"ID": FieldHolder, "Operation": FieldRequester, "Info": FieldRequester, "Who": FieldServer,
				"Version": FieldRequester, "Created": FieldServer, "Path": FieldRequester},
			UnlockChecksID: true, UnlockBodies: allBodies, UnlockStatuses: all200, LockCreatesState: new(true),
		}},
	}
}
