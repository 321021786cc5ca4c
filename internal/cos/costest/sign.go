package costest

import (
	"crypto/hmac"
	"crypto/sha1" // COS request signing is defined with SHA-1
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxClockSkew is how far in the future a key time may start.
const maxClockSkew = 15 * time.Minute

// credential is a key the server accepts. token is "" for a permanent key.
type credential struct {
	secretKey string
	token     string
}

// authorization is a parsed Authorization header.
type authorization struct {
	algorithm, ak, signTime, keyTime, signature string
	headerList, paramList                       map[string]bool
}

// authorizationFields are the fields of the header, all required.
var authorizationFields = []string{
	"q-sign-algorithm", "q-ak", "q-sign-time", "q-key-time",
	"q-header-list", "q-url-param-list", "q-signature",
}

// parseAuthorization splits "q-sign-algorithm=sha1&q-ak=...&..." into
// its fields. It reports false when a field is missing or repeated.
func parseAuthorization(h string) (authorization, bool) {
	fields := map[string]string{}
	for part := range strings.SplitSeq(h, "&") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return authorization{}, false
		}
		if _, dup := fields[k]; dup {
			return authorization{}, false
		}
		fields[k] = v
	}
	for _, f := range authorizationFields {
		if _, ok := fields[f]; !ok {
			return authorization{}, false
		}
	}
	return authorization{
		algorithm: fields["q-sign-algorithm"], ak: fields["q-ak"],
		signTime: fields["q-sign-time"], keyTime: fields["q-key-time"],
		signature:  fields["q-signature"],
		headerList: nameSet(fields["q-header-list"]),
		paramList:  nameSet(fields["q-url-param-list"]),
	}, true
}

func nameSet(list string) map[string]bool {
	set := map[string]bool{}
	for n := range strings.SplitSeq(list, ";") {
		if n != "" {
			set[n] = true
		}
	}
	return set
}

// parseTimeRange parses "<start>;<end>" in Unix seconds.
func parseTimeRange(s string) (start, end int64, ok bool) {
	a, b, found := strings.Cut(s, ";")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || start > end {
		return 0, 0, false
	}
	return start, end, true
}

// authenticate checks r's signature and returns the access key ID it was
// made with. Anonymous requests are refused: the server's buckets are
// private.
func (s *Server) authenticate(r *http.Request, now time.Time) (string, *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", errAccessDenied
	}
	a, ok := parseAuthorization(h)
	if !ok || a.algorithm != "sha1" {
		return "", errAccessDenied
	}
	cred, known := s.creds[a.ak]
	if !known {
		return "", errInvalidAK
	}
	for _, tr := range []string{a.keyTime, a.signTime} {
		start, end, ok := parseTimeRange(tr)
		if !ok {
			return "", errAccessDenied
		}
		if now.Unix() > end {
			return "", errExpired
		}
		if time.Unix(start, 0).After(now.Add(maxClockSkew)) {
			return "", errSkewed
		}
	}
	if cred.token != "" && !hmac.Equal([]byte(r.Header.Get("x-cos-security-token")), []byte(cred.token)) {
		return "", errBadToken
	}
	want := signature(cred.secretKey, a.keyTime, httpString(r, a))
	if !hmac.Equal([]byte(want), []byte(a.signature)) {
		return "", errBadSignature
	}
	return a.ak, nil
}

// signature computes q-signature as COS documents it:
//
//	SignKey      = hex(HMAC-SHA1(SecretKey, KeyTime))
//	StringToSign = "sha1\n" + KeyTime + "\n" + hex(SHA1(HttpString)) + "\n"
//	Signature    = hex(HMAC-SHA1(SignKey, StringToSign))
func signature(secretKey, keyTime, httpString string) string {
	signKey := hex.EncodeToString(hmacSHA1([]byte(secretKey), keyTime))
	sum := sha1.Sum([]byte(httpString))
	stringToSign := "sha1\n" + keyTime + "\n" + hex.EncodeToString(sum[:]) + "\n"
	return hex.EncodeToString(hmacSHA1([]byte(signKey), stringToSign))
}

func hmacSHA1(key []byte, msg string) []byte {
	m := hmac.New(sha1.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// httpString is COS's HttpString: the lower-case method, the (decoded)
// path, then the signed parameters and the signed headers, each as
// key=value pairs with lower-case, URL-encoded keys and URL-encoded values,
// sorted and joined with '&', every part followed by a newline. Only the
// parameters and headers the client listed are included; a listed one the
// request lacks simply is not there, so the signature cannot match.
func httpString(r *http.Request, a authorization) string {
	var params []pair
	for k, vs := range r.URL.Query() {
		lk := strings.ToLower(escape(k))
		if !a.paramList[lk] {
			continue
		}
		for _, v := range vs {
			params = append(params, pair{lk, v})
		}
	}
	var headers []pair
	for name := range a.headerList {
		for _, v := range headerValues(r, name) {
			headers = append(headers, pair{name, v})
		}
	}
	path := r.URL.Path
	if path == "" {
		path = "/"
	}
	return strings.ToLower(r.Method) + "\n" + path + "\n" + encodePairs(params) + "\n" + encodePairs(headers) + "\n"
}

// headerValues returns the values of the request header name (lower
// case) as the client had them when it signed. Go's server moves some
// headers out of r.Header.
func headerValues(r *http.Request, name string) []string {
	switch name {
	case "host":
		return []string{r.Host}
	case "content-length":
		if vs := r.Header.Values("Content-Length"); len(vs) > 0 {
			return vs
		}
		if r.ContentLength > 0 {
			return []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	case "transfer-encoding":
		if len(r.TransferEncoding) > 0 {
			return []string{strings.Join(r.TransferEncoding, ",")}
		}
	}
	return r.Header.Values(name)
}

type pair struct{ key, value string }

// encodePairs sorts pairs by key, then by raw value, and joins them as
// key=escape(value) with '&'.
func encodePairs(ps []pair) string {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].key != ps[j].key {
			return ps[i].key < ps[j].key
		}
		return ps[i].value < ps[j].value
	})
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.key + "=" + escape(p.value)
	}
	return strings.Join(parts, "&")
}

// escape URL-encodes s as COS's signature requires: every byte other than
// the RFC 3986 unreserved characters (A-Z a-z 0-9 - _ . ~) becomes %XX
// with upper-case hex digits.
func escape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}
