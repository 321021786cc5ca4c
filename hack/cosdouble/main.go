// Command cosdouble stands in for Tencent Cloud COS in the local demo
// (`make run`) and the end-to-end tests, so that their CosBackends never
// reach the real service: it serves internal/cos/costest's protocol
// server, which checks request signatures, on a loopback address that
// tells buckets apart by Host header as COS does. The manager is pointed
// at it with --cos-service-url.
//
// Usage:
//
//	COSDOUBLE_SECRET_KEY=KEY cosdouble --secret-id ID --bucket NAME-APPID[,NAME-APPID...]
//
// The buckets start empty and live in memory; requests must be signed
// with ID and KEY. Once it serves it prints "listening on
// http://127.0.0.1:PORT" on stdout, and it runs until SIGINT or SIGTERM.
// The secret key comes from the environment so that it does not show in
// the process list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/infrastate/backend-operator/internal/cos/costest"
)

// secretKeyEnv names the environment variable holding the secret key.
const secretKeyEnv = "COSDOUBLE_SECRET_KEY"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "cosdouble: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("cosdouble", flag.ContinueOnError)
	secretID := fs.String("secret-id", "", "secret ID requests must be signed with (required; the key is $"+secretKeyEnv+")")
	buckets := fs.String("bucket", "", "comma-separated buckets, <name>-<appid>, to create (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	secretKey := os.Getenv(secretKeyEnv)
	if *secretID == "" || secretKey == "" || *buckets == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("--secret-id, --bucket and $" + secretKeyEnv + " are required and no arguments are accepted")
	}

	srv := costest.NewServer(nil)
	defer srv.Close()
	srv.AddCredentials(*secretID, secretKey)
	for b := range strings.SplitSeq(*buckets, ",") {
		if b = strings.TrimSpace(b); b != "" {
			srv.CreateBucket(b)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Printf("listening on %s\n", srv.ServiceURL())
	<-ctx.Done()
	return nil
}
