// Command localcluster runs the local control plane of `make run`: etcd and
// kube-apiserver from KUBEBUILDER_ASSETS (hack/setup-envtest.sh), started
// through controller-runtime's envtest with the project's CRDs installed.
//
// Usage:
//
//	localcluster --dir DIR [--crd-dir config/crd/bases]
//
// Once the API server serves the CRDs it writes
//
//	DIR/kubeconfig   a cluster-admin (system:masters) kubeconfig
//	DIR/pki/         a demo CA (ca.crt), the state server's certificate
//	                 (server.crt, server.key) and a client certificate
//	                 (client.crt, client.key), see internal/devpki
//
// prints "ready kubeconfig=DIR/kubeconfig" on stdout, and runs until SIGINT
// or SIGTERM, or until its parent process exits; then it stops
// kube-apiserver and etcd and removes etcd's data. Set
// KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true to see their logs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/infrastate/backend-operator/internal/devpki"
)

// pkiValidity is how long the demo certificates are valid.
const pkiValidity = 30 * 24 * time.Hour

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "directory for the kubeconfig and the demo certificates (required)")
	crdDir := flag.String("crd-dir", filepath.Join("config", "crd", "bases"), "directory of the CRD manifests to install")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		flag.Usage()
		return errors.New("--dir is required and no arguments are accepted")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); assets == "" || err != nil {
			return errors.New(`KUBEBUILDER_ASSETS must name the directory of kube-apiserver and etcd: KUBEBUILDER_ASSETS="$(hack/setup-envtest.sh)"`)
		}
	}

	// Signals are caught before the control plane starts, so that an early
	// Ctrl-C still stops it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx = orphanContext(ctx, 500*time.Millisecond)

	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{*crdDir},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	if _, err := env.Start(); err != nil {
		_ = env.Stop()
		return fmt.Errorf("starting the control plane: %w", err)
	}
	kubeconfig, err := setUp(env, *dir)
	if err == nil {
		fmt.Printf("ready kubeconfig=%s\n", kubeconfig)
		<-ctx.Done()
		fmt.Fprintln(os.Stderr, "localcluster: stopping kube-apiserver and etcd")
	}
	if stopErr := env.Stop(); stopErr != nil {
		err = errors.Join(err, fmt.Errorf("stopping the control plane: %w", stopErr))
	}
	return err
}

// setUp writes the admin kubeconfig and the demo certificates into dir and
// returns the kubeconfig's path. The kubeconfig is written last, through a
// rename, so a reader that sees it finds everything else in place.
func setUp(env *envtest.Environment, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	pki, err := devpki.New("backend-operator-demo", pkiValidity)
	if err != nil {
		return "", err
	}
	if _, err := pki.WriteFiles(filepath.Join(dir, "pki")); err != nil {
		return "", err
	}
	user, err := env.AddUser(envtest.User{Name: "local-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding the admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("writing the kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// orphanContext is cancelled with parent, or when this process's parent
// exits (it is re-parented), so that the control plane never outlives the
// script that started it, even when the script is killed with SIGKILL.
func orphanContext(parent context.Context, every time.Duration) context.Context {
	ctx, cancel := context.WithCancel(parent)
	ppid := os.Getppid()
	go func() {
		defer cancel()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if os.Getppid() != ppid {
					fmt.Fprintln(os.Stderr, "localcluster: parent process exited")
					return
				}
			}
		}
	}()
	return ctx
}
