// Package stateserver is a reference implementation of the Terraform REST
// ("http" backend) state protocol.
//
// It answers like Terraform's own test server, so that real Terraform and
// OpenTofu clients accept it, and adds what a shared server needs:
//
//   - state documents at /state/<name> (GET, POST, PUT, DELETE);
//   - per-name locks through LOCK and UNLOCK on /state/<name>, or POST and
//     DELETE on /state/<name>/lock for clients configured with other lock
//     methods;
//   - updates and deletes refused with 423 and the holder's LockInfo while a
//     lock is held (the conflict answer, see below), unless they carry the
//     holder's ID query parameter
//     (Terraform never deletes an http state, so nothing legitimate is
//     refused);
//   - force unlock through an UNLOCK with an empty body (what
//     `terraform force-unlock` sends), logged as a warning naming the
//     holder it released (its ID and Who);
//   - Content-MD5 validation, bodies bounded (128 MiB for a state, 64 KiB
//     for a LockInfo, else 413), optional basic auth (401 with a challenge
//     for missing credentials, 403 for wrong ones) and per-request logging.
//
// The REST state servers people run differ in how they answer the lock
// protocol, and options make this server behave like each of them (modes.go
// says how they combine): [WithConflictAnswer] (the holder's LockInfo with
// 423 or 409, or plain text with no holder), [WithUnlockCheck] (UNLOCK
// checks the ID, ignores its body, or needs the exact LockInfo),
// [WithReentrantLock] (a LOCK under the holder's ID succeeds) and
// [WithUnlockBodies] (which force unlock bodies are accepted).
// [WithGitLab] makes it GitLab's managed Terraform state instead: GitLab's
// routes, token authentication and answers.
//
// State and locks live in a [Store]: [NewMemoryStore] for tests, bounded by
// a byte budget ([WithMemoryBudget], [DefaultMemoryBudget] by default) past
// which writes get 507 Insufficient Storage, or [NewDirStore] which writes
// every change atomically to a directory and so survives restarts and
// crashes. A new state is streamed into the store
// (into a temporary file of the directory store), its size and Content-MD5
// checked as it arrives, and installed only once complete and allowed by the
// lock; GETs are served from the stored document. With the directory store
// the server's memory does not grow with the size of the states, nor with
// the number of names asked for.
//
// Tests of other packages can make the server misbehave on purpose through
// [Server.InjectFault] and count the requests it received with
// [Server.Requests] (counting starts with the first fault, or at once with
// [WithRequestCounting]):
//
//	srv := stateserver.New(stateserver.NewMemoryStore())
//	ts := httptest.NewServer(srv)
//	defer ts.Close()
//	srv.InjectFault(stateserver.Fault{Method: http.MethodGet, Status: http.StatusServiceUnavailable, Times: 2})
//	// ... the client under test retries ...
//	if got := srv.Requests(http.MethodGet, "/state/x"); got != 3 { ... }
//
// The server sets no timeouts of its own: the stateserver command bounds
// stalled bodies and idle connections around it.
package stateserver
