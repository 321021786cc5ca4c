package render

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// outputTF is the root module the runs apply: one output, no providers,
// so terraform never downloads anything.
const outputTF = "output \"x\" {\n  value = \"y\"\n}\n"

// layout is one way a runner pod uses the rendered files.
type layout struct {
	// files returns the files of the working directory.
	files func(f Files, backendType string) map[string][]byte
	// initArgs are added to terraform init.
	initArgs []string
}

// layouts are the three ways a runner pod can use the rendered files: each
// mounts the file it needs (a ConfigMap item) next to its configuration.
var layouts = map[string]layout{
	"backend.tf": {
		files: func(f Files, _ string) map[string][]byte {
			return map[string][]byte{BackendTFKey: f.BackendTF, "main.tf": []byte(outputTF)}
		},
	},
	"backend.tfbackend": {
		files: func(f Files, backendType string) map[string][]byte {
			mainTF := "terraform {\n  backend \"" + backendType + "\" {}\n}\n\n" + outputTF
			return map[string][]byte{BackendTFBackendKey: f.BackendTFBackend, "main.tf": []byte(mainTF)}
		},
		initArgs: []string{"-backend-config=" + BackendTFBackendKey},
	},
	"backend.tf.json": {
		files: func(f Files, _ string) map[string][]byte {
			return map[string][]byte{BackendTFJSONKey: f.BackendTFJSON, "main.tf": []byte(outputTF)}
		},
	},
}

// workdir is a directory the real terraform or tofu runs in. Its environment sends
// every request for a non-loopback host to proxy, which refuses it: the
// commands it runs can reach loopback addresses only.
type workdir struct {
	testtools.Workdir
	// proxy received the requests terraform made for non-loopback hosts.
	proxy *refusingProxy
}

// newWorkdir writes files into a new temporary directory where runner's
// commands run, and starts the refusing proxy of its commands. env (the credentials Secret) is added to
// the clean environment of testtools.TerraformEnv, as envFrom would; it
// must not set proxy variables, which come only from proxyEnv. Every terraform command of this package's tests runs in
// such a workdir (TestTerraformRunsAreGuarded).
func newWorkdir(t *testing.T, runner testtools.Runner, files, env map[string][]byte) *workdir {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vars := testtools.TerraformEnv(t, dir)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		vars = append(vars, k+"="+string(env[k]))
	}
	for _, kv := range vars {
		if isProxyVariable(kv) {
			t.Fatalf("the environment of a terraform command sets %s: only proxyEnv may", strings.SplitN(kv, "=", 2)[0])
		}
	}
	proxy, proxyURL := startRefusingProxy(t)
	return &workdir{
		Workdir: testtools.Workdir{Bin: runner.Path, Dir: dir, Env: append(vars, proxyEnv(proxyURL)...)},
		proxy:   proxy,
	}
}

// clientCert is a self-signed client certificate for mutual TLS.
type clientCert struct {
	certPEM, keyPEM []byte
	tls             tls.Certificate
	pool            *x509.CertPool // trusts the certificate, for the server
}

func newClientCert(t *testing.T) clientCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "terraform-runner"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := clientCert{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		pool:    x509.NewCertPool(),
	}
	if c.tls, err = tls.X509KeyPair(c.certPEM, c.keyPEM); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	c.pool.AddCert(cert)
	return c
}
