package costest

import (
	"crypto/md5" // Content-MD5 is MD5 by definition
	"encoding/base64"
	"fmt"
	"hash/crc64"
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	// metaPrefix starts the name of a user metadata header.
	metaPrefix = "x-cos-meta-"
	// maxObjectBytes bounds an uploaded object, which the handler holds
	// in memory. It must stay at 64 MiB or above (minObjectBytes): the
	// state history tests copy 50 MiB states into the server.
	maxObjectBytes = 256 << 20
	// minObjectBytes is the least maxObjectBytes may be.
	minObjectBytes = 64 << 20
	// defaultMaxKeys and the cap of max-keys in a listing.
	defaultMaxKeys = 1000
	// ownerID is the owner reported in listings.
	ownerID = "1250000000"
	// forbidOverwriteHeader, set to "true" on PUT Object, makes COS refuse
	// to replace an object that exists.
	forbidOverwriteHeader = "x-cos-forbid-overwrite"
)

// The build fails (a negative constant converted to uint64) when
// maxObjectBytes is lowered below minObjectBytes.
const _ = uint64(maxObjectBytes - minObjectBytes)

// hostPattern matches COS virtual-host names: <bucket>.cos.<region>.myqcloud.com
// (accelerate is a region here) and <bucket>.cos-internal.<region>.tencentcos.cn.
var hostPattern = regexp.MustCompile(`^([^.]+)\.(?:cos|cos-internal)\.[a-z0-9-]+\.(?:myqcloud\.com|tencentcos\.cn)$`)

var crcTable = crc64.MakeTable(crc64.ECMA)

// listParams are the query parameters of GET Bucket the server knows.
var listParams = map[string]bool{"prefix": true, "delimiter": true, "marker": true, "max-keys": true, "encoding-type": true}

// response is an answer computed under the server's lock and written
// after it is released.
type response struct {
	status int
	header http.Header
	body   []byte
	err    *apiError
}

func errResp(e *apiError) response { return response{status: e.status, err: e} }

// handler serves requests for bucket, or routes them by Host header when
// bucket is "".
func (s *Server) handler(bucket string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		var readErr error
		if r.Method == http.MethodPut {
			body, readErr = io.ReadAll(io.LimitReader(r.Body, maxObjectBytes+1))
		}
		s.mu.Lock()
		s.requests++
		id := fmt.Sprintf("costest-%06d", s.requests)
		entry := Request{
			Method: r.Method, Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery,
			SecurityToken: r.Header.Get("x-cos-security-token"),
		}
		if a, ok := parseAuthorization(r.Header.Get("Authorization")); ok {
			entry.Signature = a.signature
		}
		resp := s.serveLocked(r, bucket, body, readErr, &entry)
		entry.Status = resp.status
		s.log = append(s.log, entry)
		s.mu.Unlock()
		resp.write(w, r, id)
	})
}

func (rsp response) write(w http.ResponseWriter, r *http.Request, id string) {
	h := w.Header()
	maps.Copy(h, rsp.header)
	h.Set("x-cos-request-id", id)
	h.Set("Server", "tencent-cos")
	body := rsp.body
	if rsp.err != nil {
		h.Set("Content-Type", "application/xml")
		body = errorBody(r, id, rsp.err)
	}
	if h.Get("Content-Length") == "" && rsp.status != http.StatusNoContent {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(rsp.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// serveLocked answers r in the order COS checks a request: injected
// faults, the bucket, the signature, the bucket's policy, then the
// operation.
func (s *Server) serveLocked(r *http.Request, bucket string, body []byte, readErr error, entry *Request) response {
	if s.failLeft > 0 {
		s.failLeft--
		return errResp(faultError(s.failWith))
	}
	if bucket == "" {
		bucket = bucketFromHost(r.Host)
	}
	entry.Bucket = bucket
	objects, ok := s.buckets[bucket]
	if !ok {
		return errResp(errNoSuchBucket)
	}
	ak, e := s.authenticate(r, s.now())
	if e != nil {
		return errResp(e)
	}
	entry.SecretID = ak
	if s.denied[bucket] || (s.readOnly[bucket] && r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return errResp(errAccessDenied)
	}
	key := strings.TrimPrefix(r.URL.Path, "/")
	if key == "" {
		return s.bucketOp(r, bucket, objects)
	}
	if len(r.URL.Query()) > 0 {
		return errResp(errNotImpl)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		o, ok := objects[key]
		if !ok {
			return errResp(errNoSuchKey)
		}
		return objectResp(o)
	case http.MethodPut:
		if readErr != nil {
			return errResp(errBadArgument)
		}
		return s.putObject(r, bucket, key, body)
	case http.MethodDelete:
		delete(objects, key)
		return response{status: http.StatusNoContent}
	}
	return errResp(errNotAllowed)
}

// bucketFromHost returns the bucket a COS host name addresses, "" when
// the host is not one.
func bucketFromHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if m := hostPattern.FindStringSubmatch(strings.ToLower(host)); m != nil {
		return m[1]
	}
	return ""
}

func objectResp(o *object) response {
	h := http.Header{}
	h.Set("Content-Type", o.contentType)
	h.Set("Content-Length", strconv.Itoa(len(o.data)))
	h.Set("ETag", o.etag)
	h.Set("Last-Modified", o.modified.Format(http.TimeFormat))
	h.Set("x-cos-hash-crc64ecma", strconv.FormatUint(crc64.Checksum(o.data, crcTable), 10))
	for k, v := range o.meta {
		h.Set(k, v)
	}
	// Stored bodies are never modified in place (a PUT replaces the
	// object), so the answer shares them: serving a large object
	// allocates no copy of it.
	return response{status: http.StatusOK, header: h, body: o.data}
}

func (s *Server) putObject(r *http.Request, bucket, key string, body []byte) response {
	if r.Header.Get("x-cos-copy-source") != "" {
		return errResp(errNotImpl)
	}
	if len(body) > maxObjectBytes {
		return errResp(errTooLarge)
	}
	if want := r.Header.Get("Content-MD5"); want != "" {
		sum := md5.Sum(body)
		if base64.StdEncoding.EncodeToString(sum[:]) != want {
			return errResp(errBadDigest)
		}
	}
	old, exists := s.buckets[bucket][key]
	if exists && strings.EqualFold(r.Header.Get(forbidOverwriteHeader), "true") {
		return errResp(errObjectExists)
	}
	if quota, ok := s.quotas[bucket]; ok {
		total := int64(len(body)) + s.bucketBytesLocked(bucket)
		if exists {
			total -= int64(len(old.data))
		}
		if total > quota {
			return errResp(errInsufficientStorage)
		}
	}
	o := &object{data: body, meta: map[string]string{}, contentType: r.Header.Get("Content-Type")}
	if o.contentType == "" {
		o.contentType = "application/octet-stream"
	}
	for k, vs := range r.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, metaPrefix) && len(vs) > 0 {
			o.meta[lk] = vs[0]
		}
	}
	s.storeLocked(bucket, key, o)
	h := http.Header{}
	h.Set("ETag", o.etag)
	h.Set("x-cos-hash-crc64ecma", strconv.FormatUint(crc64.Checksum(body, crcTable), 10))
	return response{status: http.StatusOK, header: h}
}

// bucketBytesLocked returns the bytes the objects of bucket hold together.
func (s *Server) bucketBytesLocked(bucket string) int64 {
	var n int64
	for _, o := range s.buckets[bucket] {
		n += int64(len(o.data))
	}
	return n
}

// bucketOp serves requests to the bucket itself: HEAD Bucket and GET
// Bucket (list objects).
func (s *Server) bucketOp(r *http.Request, bucket string, objects map[string]*object) response {
	q := r.URL.Query()
	for k := range q {
		if !listParams[k] {
			return errResp(errNotImpl)
		}
	}
	switch r.Method {
	case http.MethodHead:
		return response{status: http.StatusOK}
	case http.MethodGet:
	default:
		return errResp(errNotAllowed)
	}
	maxKeys := defaultMaxKeys
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errResp(errBadArgument)
		}
		maxKeys = min(n, defaultMaxKeys)
	}
	res := listResult{
		Name: bucket, Prefix: q.Get("prefix"), Marker: q.Get("marker"),
		Delimiter: q.Get("delimiter"), MaxKeys: maxKeys,
	}
	keys := make([]string, 0, len(objects))
	for k := range objects {
		if k > res.Marker && strings.HasPrefix(k, res.Prefix) && !rolledUp(k, res.Marker, res.Delimiter) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	seen := map[string]bool{}
	last := ""
	for _, k := range keys {
		entry, isPrefix := k, false
		if d := res.Delimiter; d != "" {
			if i := strings.Index(k[len(res.Prefix):], d); i >= 0 {
				entry, isPrefix = k[:len(res.Prefix)+i+len(d)], true
			}
		}
		if seen[entry] {
			continue
		}
		if len(res.Contents)+len(res.CommonPrefixes) == maxKeys {
			res.IsTruncated, res.NextMarker = true, last
			break
		}
		seen[entry], last = true, entry
		if isPrefix {
			res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: entry})
			continue
		}
		o := objects[k]
		res.Contents = append(res.Contents, listEntry{
			Key: k, LastModified: o.modified.Format(time.RFC3339), ETag: o.etag,
			Size: len(o.data), OwnerID: ownerID, StorageClass: "STANDARD",
		})
	}
	h := http.Header{}
	h.Set("Content-Type", "application/xml")
	return response{status: http.StatusOK, header: h, body: xmlBody(res)}
}

// rolledUp reports whether key belongs to the common prefix a previous
// page ended with (its NextMarker), so that it is not listed again.
func rolledUp(key, marker, delimiter string) bool {
	return delimiter != "" && strings.HasSuffix(marker, delimiter) && strings.HasPrefix(key, marker)
}
