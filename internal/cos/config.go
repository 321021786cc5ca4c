package cos

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

const (
	// DefaultKey is the state object name Terraform uses when the backend
	// sets no key.
	DefaultKey = "terraform.tfstate"
	// DefaultWorkspace is the name of Terraform's default workspace, whose
	// state lives directly under the prefix.
	DefaultWorkspace = "default"
	// DefaultMaxStateBytes is the state size limit when
	// Config.MaxStateBytes is 0.
	DefaultMaxStateBytes int64 = 64 << 20
	// DefaultACL is the acl Terraform gives the state object when the
	// backend sets none.
	DefaultACL = "private"
	// DefaultSessionDuration is the assume_role.session_duration Terraform
	// asks for when the backend sets none, and the CosBackend CRD's
	// default. The operator assumes no role: it only renders the block.
	DefaultSessionDuration = 2 * time.Hour

	// lockSuffix is appended to a state key to name its lock object.
	lockSuffix = ".tflock"
)

// endpointPattern is the endpoint Terraform's cos backend accepts (Terraform
// 1.6 and later; 1.5 has no endpoint argument): an http or https URL of a
// cos-internal host, nothing else. Group 1 is the scheme, group 3 the
// region, both of which end up in the bucket URL.
var endpointPattern = regexp.MustCompile(`^(http(s)?)://cos-internal\.([^.]+)\.tencentcos\.cn$`)

// bucketPattern is the <name>-<appid> shape the SDK requires of a bucket in
// a COS host name; requests to other names fail inside the SDK.
var bucketPattern = regexp.MustCompile(`^[a-z0-9-]+-\d+$`)

// Config is what the operator knows of a CosBackend: where the state is
// and the credentials to read it.
type Config struct {
	// Bucket is the bucket name, <name>-<appid>.
	Bucket string
	// Region is the bucket's region, such as ap-guangzhou. Terraform
	// requires it even when Accelerate or Endpoint decide the host.
	Region string
	// Prefix is the directory of the state objects; "" for the bucket root.
	Prefix string
	// Key is the state object name; "" means DefaultKey.
	Key string
	// Accelerate uses the global acceleration host.
	Accelerate bool
	// Endpoint is "" or http(s)://cos-internal.<region>.tencentcos.cn. When
	// set it wins over Accelerate, and its region over Region. An http://
	// endpoint needs AllowHTTPEndpoint.
	Endpoint string
	// AllowHTTPEndpoint accepts an http:// Endpoint. Requests then travel
	// in clear text: the security token (x-cos-security-token), the
	// request signatures and the state itself can be read, and the answers
	// altered, by anyone on the network path. Terraform accepts such an
	// endpoint without asking; New refuses it unless this is set.
	AllowHTTPEndpoint bool
	// SecretID is the API key ID; "" sends unsigned (anonymous) requests.
	SecretID string
	// SecretKey is the API key secret. Never printed.
	SecretKey string
	// SecurityToken is the token of temporary credentials, sent as
	// x-cos-security-token. Never printed.
	SecurityToken string
	// MaxStateBytes bounds the state object StreamState hands over; 0
	// means DefaultMaxStateBytes.
	MaxStateBytes int64
}

// String prints the configuration with SecretKey and SecurityToken
// redacted, so that logging a Config with %v or %+v leaks nothing.
func (c Config) String() string {
	return fmt.Sprintf("{Bucket:%s Region:%s Prefix:%s Key:%s Accelerate:%t Endpoint:%s AllowHTTPEndpoint:%t SecretID:%s SecretKey:%s SecurityToken:%s MaxStateBytes:%d}",
		c.Bucket, c.Region, c.Prefix, c.Key, c.Accelerate, c.Endpoint, c.AllowHTTPEndpoint, c.SecretID,
		redact(c.SecretKey), redact(c.SecurityToken), c.MaxStateBytes)
}

// GoString is String for %#v.
func (c Config) GoString() string { return "cos.Config" + c.String() }

func redact(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// withDefaults returns c with Key and MaxStateBytes defaulted.
func (c Config) withDefaults() Config {
	if c.Key == "" {
		c.Key = DefaultKey
	}
	if c.MaxStateBytes == 0 {
		c.MaxStateBytes = DefaultMaxStateBytes
	}
	return c
}

// validate applies Terraform's own argument checks (prefix and key), what
// the SDK would otherwise refuse later (bucket shape, credentials with
// surrounding spaces), and what keeps a tenant inside its prefix (no ".."
// segments: path.Join would resolve them to keys outside it). Errors wrap
// ErrInvalidConfig, name the field and quote no secret.
func (c Config) validate() error {
	if !bucketPattern.MatchString(c.Bucket) {
		return fmt.Errorf("%w: bucket %q must look like <name>-<appid>", ErrInvalidConfig, c.Bucket)
	}
	if strings.HasPrefix(c.Prefix, "/") || strings.HasPrefix(c.Prefix, "./") {
		return fmt.Errorf("%w: prefix %q must not start with '/' or './'", ErrInvalidConfig, c.Prefix)
	}
	if hasSegment(c.Prefix, "..") {
		return fmt.Errorf("%w: prefix %q must not contain '..' path segments: they reach objects outside the prefix", ErrInvalidConfig, c.Prefix)
	}
	if strings.HasPrefix(c.Key, "/") || strings.HasSuffix(c.Key, "/") {
		return fmt.Errorf("%w: key %q must not start or end with '/'", ErrInvalidConfig, c.Key)
	}
	if hasSegment(c.Key, "..") {
		return fmt.Errorf("%w: key %q must not contain '..' path segments: they reach objects outside the prefix", ErrInvalidConfig, c.Key)
	}
	if strings.HasPrefix(c.Endpoint, "http://") && !c.AllowHTTPEndpoint {
		return fmt.Errorf("%w: endpoint %q is plain http, which sends the security token and the state in clear text: use https or set AllowHTTPEndpoint", ErrInvalidConfig, c.Endpoint)
	}
	if c.MaxStateBytes < 0 {
		return fmt.Errorf("%w: MaxStateBytes %d is negative", ErrInvalidConfig, c.MaxStateBytes)
	}
	if c.SecretID != strings.TrimSpace(c.SecretID) {
		return fmt.Errorf("%w: the secret ID has leading or trailing whitespace", ErrInvalidConfig)
	}
	if c.SecretKey != strings.TrimSpace(c.SecretKey) {
		return fmt.Errorf("%w: the secret key has leading or trailing whitespace", ErrInvalidConfig)
	}
	return nil
}

// BucketURL returns the base URL Terraform's cos backend talks to for cfg.
// The precedence is Terraform's: an Endpoint wins, then Accelerate, then
// the regional host.
//
//   - Endpoint set: it must match ^(https?)://cos-internal\.([^.]+)\.tencentcos\.cn$
//     exactly (no path, no trailing slash) and the URL is
//     <scheme>://<bucket>.cos-internal.<region>.tencentcos.cn, with the scheme
//     and the region taken from the endpoint, not from cfg.Region.
//   - Accelerate: https://<bucket>.cos.accelerate.myqcloud.com.
//   - Otherwise: https://<bucket>.cos.<region>.myqcloud.com.
//
// Bucket and Region are required in every case, as Terraform requires
// them. Errors wrap ErrInvalidConfig.
func BucketURL(cfg Config) (*url.URL, error) {
	if cfg.Bucket == "" {
		return nil, fmt.Errorf("%w: bucket is required", ErrInvalidConfig)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("%w: region is required", ErrInvalidConfig)
	}
	var raw string
	switch {
	case cfg.Endpoint != "":
		m := endpointPattern.FindStringSubmatch(cfg.Endpoint)
		if m == nil {
			return nil, fmt.Errorf("%w: endpoint %q must be http(s)://cos-internal.<region>.tencentcos.cn", ErrInvalidConfig, cfg.Endpoint)
		}
		raw = fmt.Sprintf("%s://%s.cos-internal.%s.tencentcos.cn", m[1], cfg.Bucket, m[3])
	case cfg.Accelerate:
		raw = fmt.Sprintf("https://%s.cos.accelerate.myqcloud.com", cfg.Bucket)
	default:
		raw = fmt.Sprintf("https://%s.cos.%s.myqcloud.com", cfg.Bucket, cfg.Region)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: bucket URL: %w", ErrInvalidConfig, err)
	}
	// Terraform only checks that the URL parses; a bucket or region
	// holding '/', '?', '@' or ':' would silently move the host. Refuse.
	if u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" || u.Port() != "" {
		return nil, fmt.Errorf("%w: bucket %q and region %q do not form a host name", ErrInvalidConfig, cfg.Bucket, cfg.Region)
	}
	return u, nil
}

// StateKey returns the object key of a workspace's state, as Terraform's
// cos backend computes it: path.Join(prefix, key) for the "default"
// workspace and path.Join(prefix, workspace, key) for any other. A key of
// "" means DefaultKey. path.Join cleans the result: no leading slash with
// an empty prefix, a trailing slash on the prefix is dropped, and an empty
// workspace name collapses to the default layout. StateKey checks nothing:
// ".." segments in its arguments lead outside the prefix. A Client refuses
// them (New for prefix and key, every read for the workspace).
func StateKey(prefix, key, workspace string) string {
	if key == "" {
		key = DefaultKey
	}
	if workspace == DefaultWorkspace {
		return path.Join(prefix, key)
	}
	return path.Join(prefix, workspace, key)
}

// validateWorkspace refuses the workspace names whose state key would not
// be the workspace's own: blank names (Terraform refuses them), names with
// ".." segments (the key would leave the workspace's directory, possibly
// the prefix) and names with "." segments ("." itself would collapse onto
// the default workspace's key). Terraform's own workspace names cannot
// contain '/' at all. Errors wrap ErrInvalidConfig.
func validateWorkspace(workspace string) error {
	if strings.TrimSpace(workspace) == "" {
		return fmt.Errorf("%w: the workspace name must not be empty", ErrInvalidConfig)
	}
	if hasSegment(workspace, ".", "..") {
		return fmt.Errorf("%w: workspace %q must not be or contain '.' or '..' path segments: its state key would not be its own", ErrInvalidConfig, workspace)
	}
	return nil
}

// hasSegment reports whether any '/'-separated segment of p is one of
// names.
func hasSegment(p string, names ...string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if slices.Contains(names, seg) {
			return true
		}
	}
	return false
}

// LockKey returns the key of the lock object of the state at stateKey:
// stateKey followed by ".tflock".
func LockKey(stateKey string) string { return stateKey + lockSuffix }
