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
//   - updates refused with 423 while a lock is held, unless they carry the
//     holder's ID query parameter;
//   - force unlock through an UNLOCK with an empty body (what
//     `terraform force-unlock` sends);
//   - Content-MD5 validation, optional basic auth and per-request logging.
//
// State and locks live in a [Store]: [NewMemoryStore] for tests, or
// [NewDirStore] which writes every change atomically to a directory and so
// survives restarts and crashes.
//
// Tests of other packages can make the server misbehave on purpose through
// [Server.InjectFault] and count the requests it received with
// [Server.Requests]:
//
//	srv := stateserver.New(stateserver.NewMemoryStore())
//	ts := httptest.NewServer(srv)
//	defer ts.Close()
//	srv.InjectFault(stateserver.Fault{Method: http.MethodGet, Status: http.StatusServiceUnavailable, Times: 2})
//	// ... the client under test retries ...
//	if got := srv.Requests(http.MethodGet, "/state/x"); got != 3 { ... }
package stateserver
