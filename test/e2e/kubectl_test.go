package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// kubectl runs the kubectl binary with the suite's admin kubeconfig and a
// HOME of its own (so its discovery cache lives in the suite's directory).
type kubectl struct {
	path, home, kubeconfig string
}

func newKubectl(path, dir string, kubeconfig []byte) *kubectl {
	home := filepath.Join(dir, "home")
	Expect(os.MkdirAll(home, 0o700)).To(Succeed())
	k := &kubectl{path: path, home: home, kubeconfig: filepath.Join(dir, "kubeconfig")}
	Expect(os.WriteFile(k.kubeconfig, kubeconfig, 0o600)).To(Succeed())
	return k
}

// result is what a kubectl run printed.
type result struct {
	stdout, stderr string
	err            error
}

// run runs kubectl in namespace with args, feeding stdin when it is not
// empty. It fails only when kubectl cannot be started.
func (k *kubectl) run(ctx context.Context, namespace, stdin string, args ...string) result {
	full := append([]string{"--kubeconfig", k.kubeconfig, "--request-timeout", "30s"}, args...)
	if namespace != "" {
		full = append([]string{"--namespace", namespace}, full...)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.path, full...)
	cmd.Env = []string{"HOME=" + k.home, "PATH=" + os.Getenv("PATH")}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		Fail("running kubectl: " + err.Error())
	}
	GinkgoWriter.Printf("$ kubectl %s\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// must runs kubectl and expects it to succeed; it returns stdout.
func (k *kubectl) must(ctx context.Context, namespace string, args ...string) string {
	r := k.run(ctx, namespace, "", args...)
	ExpectWithOffset(1, r.err).NotTo(HaveOccurred(), "kubectl %s:\n%s", strings.Join(args, " "), r.stderr)
	return r.stdout
}

// apply runs kubectl apply -f - with manifest and expects success.
func (k *kubectl) apply(ctx context.Context, namespace, manifest string) {
	r := k.run(ctx, namespace, manifest, "apply", "-f", "-")
	ExpectWithOffset(1, r.err).NotTo(HaveOccurred(), "kubectl apply:\n%s\n%s", r.stderr, manifest)
}

// getJSON reads one object with kubectl get -o json into out.
func (k *kubectl) getJSON(ctx context.Context, namespace, kindName string, out any) {
	stdout := k.must(ctx, namespace, "get", kindName, "-o", "json")
	ExpectWithOffset(1, json.Unmarshal([]byte(stdout), out)).To(Succeed())
}

// jsonpath reads a JSONPath expression of one object, "" when absent.
func (k *kubectl) jsonpath(ctx context.Context, namespace, kindName, expr string) string {
	return k.must(ctx, namespace, "get", kindName, "-o", "jsonpath="+expr)
}

// condition reads the status, reason and message of one condition.
func (k *kubectl) condition(ctx context.Context, namespace, kindName, condType string) (status, reason, message string) {
	expr := `{.status.conditions[?(@.type=="` + condType + `")].status}|{.status.conditions[?(@.type=="` + condType + `")].reason}|{.status.conditions[?(@.type=="` + condType + `")].message}`
	parts := strings.SplitN(k.jsonpath(ctx, namespace, kindName, expr), "|", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

// configMapData is the data of a ConfigMap, read with kubectl.
func (k *kubectl) configMapData(ctx context.Context, namespace, name string) map[string]string {
	var cm struct {
		Data map[string]string `json:"data"`
	}
	k.getJSON(ctx, namespace, "configmap/"+name, &cm)
	return cm.Data
}

// secretData is the decoded data of a Secret, read with kubectl: what a
// pod that uses envFrom gets as environment variables.
func (k *kubectl) secretData(ctx context.Context, namespace, name string) map[string]string {
	var secret struct {
		Data map[string]string `json:"data"`
	}
	k.getJSON(ctx, namespace, "secret/"+name, &secret)
	out := make(map[string]string, len(secret.Data))
	for key, value := range secret.Data {
		decoded, err := base64.StdEncoding.DecodeString(value)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		out[key] = string(decoded)
	}
	return out
}

// createStateServerSecrets creates, in namespace, the Secrets and the
// ConfigMap the HttpBackends of the suite reference, named as in
// config/samples: a kubernetes.io/tls client certificate Secret, a CA
// ConfigMap (key ca.crt) and, unless password is empty, a password Secret
// (key password).
func createStateServerSecrets(ctx context.Context, namespace, password string) {
	if password != "" {
		kc.must(ctx, namespace, "create", "secret", "generic", "demo-state-password", "--from-literal=password="+password)
	}
	kc.must(ctx, namespace, "create", "secret", "tls", "demo-state-client-tls", "--cert="+pkiFiles.ClientCert, "--key="+pkiFiles.ClientKey)
	kc.must(ctx, namespace, "create", "configmap", "demo-state-ca", "--from-file=ca.crt="+pkiFiles.CACert)
}
