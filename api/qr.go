package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // logo formats
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/internal/qrcode"
)

// linkQR answers GET /v1/links/{id}/qr?format=png|svg: the QR code of the
// short URL, styled by the link's qr_code_options.
func (s *Server) linkQR(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	l, err := s.linkAccess(r.Context(), p, mux.Vars(r)["link_id"])
	if err != nil {
		return err
	}
	format := strings.ToLower(r.URL.Query().Get("format"))
	if format == "" {
		format = "png"
	}
	if format != "png" && format != "svg" {
		return domain.Invalid("format must be png or svg")
	}
	var o qrcode.Options
	if q := l.QRCodeOptions; q != nil {
		o = qrcode.Options{Size: deref(q.Size), Color: deref(q.Color), BackgroundColor: deref(q.BackgroundColor),
			Logo: deref(q.Logo), LogoSize: deref(q.LogoSize), ErrorCorrectionLevel: deref(q.ErrorCorrectionLevel)}
	}
	if v := r.URL.Query().Get("size"); v != "" {
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil {
			return domain.Invalid("size must be an integer")
		}
		o.Size = n
	}
	if err := qrcode.Validate(o); err != nil {
		return domain.Invalid("%s", err.Error())
	}
	content := s.shortURL(r.Context(), l, nil) + "?qr=1"
	var buf bytes.Buffer
	if format == "svg" {
		if err := qrcode.SVG(&buf, content, o, o.Logo); err != nil {
			return domain.Invalid("%s", err.Error())
		}
		w.Header().Set("Content-Type", "image/svg+xml")
	} else {
		var logo image.Image
		if o.Logo != "" {
			logo, err = fetchLogo(r.Context(), o.Logo)
			if err != nil {
				s.log.Warn("QR logo not used", "link", l.ID, "err", err)
				logo = nil
			}
		}
		if err := qrcode.PNG(&buf, content, o, logo); err != nil {
			return domain.Invalid("%s", err.Error())
		}
		w.Header().Set("Content-Type", "image/png")
	}
	w.Header().Set("Cache-Control", "private, max-age=300")
	w.Header().Set("Content-Length", fmt.Sprint(buf.Len()))
	_, err = w.Write(buf.Bytes())
	return err
}

// maxLogoBytes bounds a fetched logo.
const maxLogoBytes = 1 << 20

// fetchLogo loads a logo: a data: URI, or an http(s) URL fetched with a
// short timeout, a size cap, and a dialer that refuses loopback, private
// and link-local addresses, so that a link's options cannot make the
// server reach into its own network.
func fetchLogo(ctx context.Context, ref string) (image.Image, error) {
	if strings.HasPrefix(ref, "data:") {
		meta, data, ok := strings.Cut(strings.TrimPrefix(ref, "data:"), ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return nil, errors.New("logo data URI must be base64")
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, err
		}
		img, _, err := image.Decode(bytes.NewReader(b))
		return img, err
	}
	if !strings.HasPrefix(ref, "https://") && !strings.HasPrefix(ref, "http://") {
		return nil, errors.New("logo must be an http(s) URL or a data URI")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
	if err != nil {
		return nil, err
	}
	resp, err := logoClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("logo: status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxLogoBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxLogoBytes {
		return nil, errors.New("logo too large")
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	return img, err
}

var logoClient = &http.Client{
	Timeout: 3 * time.Second,
	Transport: &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout: 2 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				host, _, err := net.SplitHostPort(address)
				if err != nil {
					return err
				}
				ip := net.ParseIP(host)
				if ip == nil || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() {
					return fmt.Errorf("logo: address %s not allowed", host)
				}
				return nil
			},
		}).DialContext,
		MaxResponseHeaderBytes: 16 << 10,
	},
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 3 {
			return errors.New("too many redirects")
		}
		return nil
	},
}
