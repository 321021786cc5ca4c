// Command stateserver serves Terraform remote state over the REST protocol of
// Terraform's "http" backend, from memory or from a directory.
//
// Usage:
//
//	stateserver [--listen 127.0.0.1:8080] [--data-dir DIR]
//	            [--username NAME]  (password from STATESERVER_PASSWORD)
//	            [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
//	            [--body-timeout 1m] [--idle-timeout 2m] [--shutdown-timeout 10s]
//	            [--conflict holder-423|holder-409|text-409|text-423]
//	            [--unlock checks-id|ignores-body|exact-body] [--reentrant-lock]
//	            [--unlock-bodies any|empty|id|none]
//	            [--gitlab [--gitlab-role maintainer|developer]]
//
// States live at /state/<name>; point Terraform at it with
//
//	terraform {
//	  backend "http" {
//	    address        = "http://127.0.0.1:8080/state/prod"
//	    lock_address   = "http://127.0.0.1:8080/state/prod"
//	    unlock_address = "http://127.0.0.1:8080/state/prod"
//	  }
//	}
//
// With --data-dir, uploads are streamed to a temporary file in the directory
// and renamed into place once complete, and downloads are read from the
// files: memory use stays small whatever the size of the states (up to
// 128 MiB each), and a crash leaves the old or the new state, never a torn
// one. Without it, states are kept in memory and lost on exit.
//
// With --username, requests without credentials get 401 (Terraform says
// "requires auth") and requests with wrong ones 403 ("invalid auth"). Without
// --username or --client-ca, on an address other than a loopback one, the
// server prints a WARNING on stderr: anyone who can reach it can read and
// overwrite every state.
//
// A request body that stops arriving, or a response that stops being read,
// for --body-timeout is dropped; any progress restarts the wait, so a slow
// but steady upload is never cut. Headers must arrive within 10s, and idle
// keep-alive connections are closed after --idle-timeout.
//
// The lock flags make the server answer like the other REST state servers
// people run, so that clients can be tested against each behaviour:
// --conflict answers a lock conflict with the holder's LockInfo and 423
// (the default) or 409, or with plain text and no holder; --unlock makes
// UNLOCK check the holder's ID (the default), ignore its body (any UNLOCK
// releases the lock) or release only on a byte-identical copy of the
// LockInfo that locked; --reentrant-lock answers 200 to a LOCK under the
// holder's own ID; --unlock-bodies refuses force unlock bodies (the empty
// one terraform force-unlock sends, the ID-only one OpenTofu sends).
//
// --gitlab serves GitLab's managed Terraform state instead, at
// /api/v4/projects/<id>/terraform/state/<name> (lock and unlock at
// <address>/lock with POST and DELETE, versions at
// <address>/versions/<serial>), for one user: --username names it (the
// holder's Who in conflicts) and $STATESERVER_PASSWORD is its access token;
// --gitlab-role developer lets it read only.
//
// The server logs one line per request to stderr, and a warning naming the
// holder for every force unlock; it stops gracefully on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(mainExitCode())
}

func mainExitCode() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "stateserver: %v\n", err)
		return 2
	default:
		fmt.Fprintf(os.Stderr, "stateserver: %v\n", err)
		return 1
	}
}
