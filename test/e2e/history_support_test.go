package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// historyStack is a stack of one terraform_data whose input is var.n: each
// apply with another n writes a new serial, and a plan shows which n the
// state holds. terraform_data is built into Terraform: init downloads
// nothing.
const historyStack = `
variable "n" {
  type = number
}

resource "terraform_data" "release" {
  input = var.n
}

output "n" {
  value = terraform_data.release.output
}
`

// The destination of the histories: a bucket of the COS double the specs
// run in the test process, and the credentials it accepts.
const (
	historyBucket    = "snapshots-1250000000"
	historySecretID  = "AKIDHISTORYEXAMPLEEXAMPLEEXAMPLE"
	historySecretKey = "history-example-secret-key"
)

// startHistoryCOS runs a COS double in the test process, holding the empty
// bucket historyBucket and accepting historySecretID and historySecretKey,
// until the spec (or ordered container) ends. The specs read the objects
// it holds directly; the manager reaches it through --cos-service-url=
// its ServiceURL.
func startHistoryCOS() *costest.Server {
	srv := costest.NewServer(nil)
	DeferCleanup(srv.Close)
	srv.AddCredentials(historySecretID, historySecretKey)
	srv.CreateBucket(historyBucket)
	return srv
}

// createSnapshotsBackend creates, in namespace, the CosBackend "snapshots"
// of historyBucket with its credentials Secret, and waits until it is
// Ready: the destination of the histories.
func createSnapshotsBackend(ctx context.Context, namespace string) {
	kc.must(ctx, namespace, "create", "secret", "generic", "snapshots-credentials",
		"--from-literal=secretId="+historySecretID, "--from-literal=secretKey="+historySecretKey)
	kc.apply(ctx, namespace, manifestOf(builders.MakeCosBackend("snapshots", "", historyBucket).
		Region("ap-guangzhou").Credentials("snapshots-credentials").Obj()))
	kc.must(ctx, namespace, "wait", "--for=condition=Ready", "cosbackend/snapshots", "--timeout=60s")
}

// makeStateHistory is the StateHistory name of the HttpBackend backend,
// kept under prefix in CosBackend "snapshots", read every interval, keeping
// count snapshots (the API's default when 0).
func makeStateHistory(name, backend, prefix string, interval time.Duration, count int32) *backendsv1alpha1.StateHistory {
	h := &backendsv1alpha1.StateHistory{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: backendsv1alpha1.StateHistorySpec{
			BackendRef: backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: backend},
			Destination: backendsv1alpha1.HistoryDestination{
				CosBackendRef: backendsv1alpha1.LocalObjectReference{Name: "snapshots"},
				Prefix:        prefix,
			},
			Interval: &metav1.Duration{Duration: interval},
		},
	}
	if count > 0 {
		h.Spec.Retain = &backendsv1alpha1.HistoryRetention{Count: &count}
	}
	return h
}

// makeStateRestore is the StateRestore name of serial of StateHistory
// history.
func makeStateRestore(name, history string, serial int64) *backendsv1alpha1.StateRestore {
	return &backendsv1alpha1.StateRestore{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: backendsv1alpha1.StateRestoreSpec{
			HistoryRef: backendsv1alpha1.LocalObjectReference{Name: history},
			Serial:     serial,
		},
	}
}

// getHistory reads the StateHistory name with kubectl.
func getHistory(ctx context.Context, namespace, name string) *backendsv1alpha1.StateHistory {
	h := &backendsv1alpha1.StateHistory{}
	kc.getJSON(ctx, namespace, "statehistory/"+name, h)
	return h
}

// snapshotOf returns the snapshot of serial that h lists, and whether it
// lists one.
func snapshotOf(h *backendsv1alpha1.StateHistory, serial int64) (backendsv1alpha1.StateSnapshot, bool) {
	i := slices.IndexFunc(h.Status.Snapshots, func(s backendsv1alpha1.StateSnapshot) bool { return s.Serial == serial })
	if i < 0 {
		return backendsv1alpha1.StateSnapshot{}, false
	}
	return h.Status.Snapshots[i], true
}

// serialsOf are the serials h lists, in its order (newest first).
func serialsOf(h *backendsv1alpha1.StateHistory) []int64 {
	serials := make([]int64, 0, len(h.Status.Snapshots))
	for _, s := range h.Status.Snapshots {
		serials = append(serials, s.Serial)
	}
	return serials
}

// suiteStateClient is a state client of the state stateName on the suite's
// state server, with its credentials and certificates.
func suiteStateClient(stateName string) *stateclient.Client {
	cfg := stateclient.DefaultConfig(stateServer.stateURL(stateName))
	cfg.Username, cfg.Password = stateUser, statePassword
	cfg.ClientCertificatePEM, cfg.ClientPrivateKeyPEM, cfg.ClientCACertificatePEM = pki.ClientCert, pki.ClientKey, pki.CACert
	sc, err := stateclient.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return sc
}

// serverState is the state the server holds, byte for byte, as sc reads it.
func serverState(ctx context.Context, sc *stateclient.Client) []byte {
	var buf bytes.Buffer
	found, _, err := sc.StreamState(ctx, func(r io.Reader) error {
		_, err := io.Copy(&buf, r)
		return err
	})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, found).To(BeTrue(), "the server holds no state")
	return buf.Bytes()
}

// stateHeader is the serial and lineage of a state document.
type stateHeader struct {
	Serial  int64  `json:"serial"`
	Lineage string `json:"lineage"`
}

// headerOf reads the serial and lineage of state.
func headerOf(state []byte) stateHeader {
	var h stateHeader
	ExpectWithOffset(1, json.Unmarshal(state, &h)).To(Succeed())
	return h
}

// sha256Hex is the hex SHA-256 of data.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// snapshotKey is the key a snapshot of state has under prefix, as the
// API documents it: <prefix>/<lineage>/<serial, 20 digits>-<sha256>.tfstate.
func snapshotKey(prefix string, state []byte) string {
	h := headerOf(state)
	return fmt.Sprintf("%s/%s/%020d-%s.tfstate", prefix, h.Lineage, h.Serial, sha256Hex(state))
}

// newHistoryRunner prepares a terraform runner of historyStack for the
// HttpBackend whose rendered objects are configMap and secret.
func newHistoryRunner(ctx context.Context, parent, namespace, configMap, secret string) *runner {
	tf := newRunner(ctx, parent, namespace, configMap, secret)
	Expect(os.WriteFile(filepath.Join(tf.dir, "main.tf"), []byte(historyStack), 0o600)).To(Succeed())
	return tf
}

// exitCode is the exit code of a runner's command that returned err.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	ExpectWithOffset(1, errors.As(err, &exitErr)).To(BeTrue(), "the command did not run: %v", err)
	return exitErr.ExitCode()
}
