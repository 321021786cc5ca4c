// Command stateserver serves Terraform remote state over the REST protocol of
// Terraform's "http" backend, from memory or from a directory.
//
// Usage:
//
//	stateserver [--listen 127.0.0.1:8080] [--data-dir DIR]
//	            [--username NAME]  (password from STATESERVER_PASSWORD)
//	            [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
//	            [--memory-budget-mib 512] [--max-connections 512]
//	            [--body-timeout 1m] [--header-timeout 10s] [--idle-timeout 2m]
//	            [--shutdown-timeout 10s]
//	            [--conflict holder-423|holder-409|text-409|text-423]
//	            [--unlock checks-id|ignores-body|exact-body] [--reentrant-lock]
//	            [--unlock-bodies any|empty|id|none]
//	            [--gitlab [--gitlab-role maintainer|developer]]
//	stateserver conformance URL [--username U] [--password-env VAR]
//	            [--lock-address A --lock-method M --unlock-address A --unlock-method M | --gitlab]
//	            [--server-ca FILE] [--tls-cert FILE --tls-key FILE] [--skip-cert-verification]
//	            [--use-url | --scratch-name NAME] [--retry-max N] [--timeout 2m]
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
// one. Without it, states are kept in memory and lost on exit, within
// --memory-budget-mib (512 MiB by default, uploads in progress included): a
// write past it gets 507 Insufficient Storage and changes nothing.
//
// With --username, requests without credentials get 401 (Terraform says
// "requires auth") and requests with wrong ones 403 ("invalid auth"). Without
// --username or --client-ca, on an address other than a loopback one, the
// server prints a WARNING on stderr: anyone who can reach it can read and
// overwrite every state.
//
// A request body that stops arriving, or a response that stops being read,
// for --body-timeout is dropped; any progress restarts the wait, so a slow
// but steady upload is never cut. Headers (and the TLS handshake) must
// arrive within --header-timeout (10s by default), however steadily they
// trickle, and idle keep-alive connections are closed after --idle-timeout.
// At most --max-connections (512 by default) connections are served at
// once; more wait in the kernel's accept queue until one closes.
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
// The conformance subcommand checks how a REST state server, this one or
// any other, answers the lock protocol: on a scratch state URL/<name> it
// removes when done (or the state at URL itself with --use-url), with
// locks of its own only, it learns whether conflicts name the holder,
// whether LOCK is re-entrant, whether UNLOCK checks the ID, which release
// bodies work and whether LOCK creates a state, and prints that with what
// each of backend-operator's lock features does on the server (see
// docs/servers.md). In --lock-address and --unlock-address, {address}
// stands for the checked state's address; --gitlab sets them as GitLab
// needs. The password comes from the variable --password-env names
// (TF_HTTP_PASSWORD by default). It exits 0 when the check completed, 1
// when it could not (the state locked, a lock it could not release, the
// server unreachable), 2 for a bad command line.
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
	var err error
	if len(os.Args) > 1 && os.Args[1] == conformanceCommand {
		err = runConformance(ctx, os.Args[2:], os.Getenv, os.Stdout, os.Stderr)
	} else {
		err = run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	}
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
