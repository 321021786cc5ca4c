// Command stateserver serves Terraform remote state over the REST protocol of
// Terraform's "http" backend, from memory or from a directory.
//
// Usage:
//
//	stateserver [--listen 127.0.0.1:8080] [--data-dir DIR]
//	            [--username NAME]  (password from STATESERVER_PASSWORD)
//	            [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
//	            [--body-timeout 1m] [--idle-timeout 2m] [--shutdown-timeout 10s]
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
