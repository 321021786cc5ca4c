package controllers

import (
	"context"
	"io"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/internal/render"
)

// backendKind is what the operator needs of one backend kind: the only
// code that knows the kind's spec. Methods that take a backendObject get
// an object of the kind (newObject's type).
type backendKind interface {
	// name is the API kind: HttpBackend, CosBackend.
	name() string
	// newObject returns an empty object of the kind.
	newObject() backendObject
	// newList returns an empty list of the kind.
	newList() client.ObjectList
	// readyGates are the conditions that gate Ready besides the render,
	// in the order that decides which one Ready reports (see conditions.Summarize).
	readyGates() []string
	// configMapName is obj's spec.configMapName: the name of the rendered
	// ConfigMap, or "" for the default.
	configMapName(obj backendObject) string
	// references lists the Secrets and ConfigMaps obj references, as
	// related.SecretReference and related.ConfigMapReference values.
	references(obj backendObject) []string
	// checkSpec refuses, as a stall, a spec the admission rules would
	// refuse today but that was stored before they existed.
	checkSpec(obj backendObject) error
	// probeSpec is obj's spec.probe; nil when it sets none.
	probeSpec(obj backendObject) *backendsv1alpha1.ProbeSpec
	// failures are the failure classes of the kind's client errors, which
	// classifyFailure reads between the classes every kind shares.
	failures() []failureClass
	// resolve reads what obj references under env and checks it. It may
	// set status fields that it decides (a CosBackend's region in
	// effect). Every problem the user must fix is a stall naming the
	// object and key, never a value.
	resolve(ctx context.Context, env kindEnv, obj backendObject) (resolvedBackend, error)
}

// kindEnv is what a kind resolves an object with: the references it may
// read and the manager's settings.
type kindEnv struct {
	// refs reads the Secrets and ConfigMaps of the object's namespace.
	refs referenceReader
	// tenant is the namespace whose shares the reads of the object's
	// state draw from (decryption slots, key derivation CPU): the
	// object's own, or, for a RemoteState reading a backend of another
	// namespace, the RemoteState's.
	tenant string
	// clock is the manager's clock.
	clock clock.PassiveClock
	// stateClients and cosClients build the clients of the backends of
	// the namespace (connecting only where the manager's address policy
	// allows, through the tenant's circuits).
	stateClients stateClientFactory
	cosClients   cosClientFactory
	// cosDefaultRegion is the region of CosBackends that set none.
	cosDefaultRegion string
	// decryptions bounds the encrypted states read at once.
	decryptions *decryptions
	// derivations is the key derivation CPU budget the object's
	// namespace draws from.
	derivations *budget.Shares
	// metrics are the manager's series, which the kind's probes record.
	metrics *operatorMetrics
	// log is the logger of the reconciliation, for the clients.
	log logr.Logger
}

// resolvedBackend is a backend object whose references have been read:
// everything rendering it, probing it and reading its state needs. It
// holds credential material, which never leaves the process except in the
// rendered Secret.
type resolvedBackend interface {
	// inputs are what a probe or a read of the state depends on besides
	// the object's spec: credential material, settings the manager
	// decides. A change makes a probe due at once; only their
	// fingerprint is kept.
	inputs() [][]byte
	// render returns the files of the rendered ConfigMap and the data of
	// the credentials Secret.
	render() (render.Files, map[string][]byte, error)
	// probe says how the object is probed at interval (0 when periodic
	// probing is disabled); lockUsers is true while StateLocks name the
	// object, or StateRestores under way write to it, whose lock features
	// may need what the probe learns.
	probe(interval time.Duration, lockUsers bool) probePlan
	// openState returns the reader of a workspace's state, with the
	// backend's own client and settings. It connects only when called.
	openState(workspace string) (stateStreamer, error)
	// writer returns the writer of a workspace's state, with the
	// backend's own client and settings, for a restore holding its lock.
	// It connects only when called.
	writer(workspace string) (stateWriter, error)
	// decrypter decrypts the backend's encrypted states with its
	// spec.encryption; the zero value without encryption.
	decrypter() stateDecrypter
	// locker returns the locker of a workspace's lock for the StateLock
	// owner, with the backend's own client and settings. It connects only
	// when used. A backend whose lock cannot be taken is a stall.
	locker(workspace string, owner client.Object) (stateLocker, error)
	// lockWaiting says, in a sentence for a condition message, what a
	// StateLock waits for before it takes the lock (the backend learning
	// its server, say); "" when it may take it now.
	lockWaiting() string
}

// stateStreamer reads a workspace's state and hands its body to read as it
// arrives; found is false when there is no state, size is its size.
type stateStreamer func(ctx context.Context, read func(io.Reader) error) (found bool, size int64, err error)

// stateWriter writes a whole state to a workspace under the lock lockID
// names: size bytes of body, which it may rewind to send again, checked
// against md5sum. It connects only when called.
type stateWriter func(ctx context.Context, lockID string, body io.ReadSeeker, size int64, md5sum [16]byte) error

// probePlan is how a backend kind probes one object.
type probePlan struct {
	// condition is the condition the probe sets (StateReachable,
	// BucketReady).
	condition string
	// off, when set, says why the object is not probed periodically
	// (ProbeDisabled, AssumeRoleNotSupported): condition is set to it and
	// status.state is cleared.
	off *conditions.Observation
	// start builds the probe, with the clients it needs; nil when there is
	// nothing to probe at all, which clears the lock status. An error is
	// a stall.
	start func() (probes.Func, error)
	// apply writes into the object's status what a probe that ended at
	// finished learned (start's probe returned value).
	apply func(value any, finished time.Time)
	// lockUnchecked, when set, says why the probe does not read the lock,
	// and how to have it read: the lock status is then what the
	// StateLocks that hold it say (see applyUncheckedLock).
	lockUnchecked string
	// lockPolicy is the spec's lockPolicy, whose stale threshold the lock
	// series a new manager serves from the status include (see
	// seedLockSeries), and which says when a holder the status records as
	// gone is released: the next probe runs then at the latest (see
	// holderReleaseAt).
	lockPolicy *backendsv1alpha1.LockPolicy
	// learnPending is true while StateLocks wait for the probe to learn
	// what the state server does with locks: a probe that could not (the
	// state was locked) is tried again within learnRetry, not only at the
	// interval.
	learnPending bool
}

// learnRetry is how soon a probe that could not learn what the state
// server does with locks runs again while StateLocks wait for it: one
// LOCK, refused while another holds the lock, every few seconds, as
// terraform -lock-timeout sends them.
const learnRetry = 10 * time.Second
