// Command stateserver serves Terraform remote state over the REST protocol of
// Terraform's "http" backend, from memory or from a directory.
//
// Usage:
//
//	stateserver [--listen 127.0.0.1:8080] [--data-dir DIR]
//	            [--username NAME]  (password from STATESERVER_PASSWORD)
//	            [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
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
// The server logs one line per request to stderr and stops gracefully on
// SIGINT or SIGTERM.
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
