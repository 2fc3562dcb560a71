// Package qrcode renders the QR code of a short URL as PNG or SVG, styled by a
// link's qr_code_options.
//
// Both formats draw the same module matrix (encoded by
// github.com/yeqown/go-qrcode/v2) with a quiet zone of QuietZone modules on
// every side, and are exactly Size×Size pixels:
//
//   - PNG is drawn by github.com/yeqown/go-qrcode/writer/standard. That writer
//     only knows whole-pixel module widths, so the module width is the largest
//     that fits (Size / (modules + 2×QuietZone)) and the remaining pixels (fewer
//     than one module's worth) are added to the quiet zone, split evenly.
//   - SVG is written here from the matrix: one <rect> for the background and
//     one <path> of unit rectangles for the dark modules, in a viewBox measured
//     in modules, scaled to width and height Size.
//
// The caller fetches the logo: PNG takes a decoded image.Image and draws it
// centred, scaled to fit LogoSize×LogoSize (aspect ratio kept); SVG takes an
// href (an https URL or a data: URI) and references it with an <image>
// element of LogoSize×LogoSize, centred.
package qrcode

import (
	"errors"
	"fmt"
	"image/color"
	"net/url"
	"strings"

	qr "github.com/yeqown/go-qrcode/v2"
)

// Limits and defaults of Options.
const (
	// MinSize and MaxSize bound Options.Size, in pixels. Below 64 px a code
	// holding a typical short URL (25-33 modules plus the quiet zone) has
	// modules under two pixels wide; above 2048 px the PNG is large and slow
	// to render for no gain in readability.
	MinSize = 64
	MaxSize = 2048

	DefaultSize            = 256
	DefaultColor           = "#000000"
	DefaultBackgroundColor = "#FFFFFF"
	// DefaultLevel is the error correction level without a logo;
	// DefaultLogoLevel the one with a logo, which hides part of the modules.
	DefaultLevel     = "M"
	DefaultLogoLevel = "Q"
	// DefaultLogoDivisor gives the logo size when a logo is present and
	// LogoSize is 0: Size / DefaultLogoDivisor.
	DefaultLogoDivisor = 5
	// MaxLogoDivisor bounds LogoSize: at most Size / MaxLogoDivisor.
	MaxLogoDivisor = 3
	// MaxLogoURLLength bounds Options.Logo.
	MaxLogoURLLength = 2048

	// QuietZone is the margin around the code in modules (ISO/IEC 18004
	// asks for 4).
	QuietZone = 4
)

// Options styles a QR code. They mirror a link's qr_code_options; zero
// values take the defaults above.
type Options struct {
	// Size is the width and height of the image in pixels, MinSize..MaxSize.
	Size int
	// Color and BackgroundColor are "#RGB" or "#RRGGBB", any case.
	Color           string
	BackgroundColor string
	// Logo is the URL of a logo (http or https). Rendering never fetches it:
	// the caller passes the fetched image to PNG or an href to SVG. A logo
	// changes the default error correction level to Q.
	Logo string
	// LogoSize is the logo's box in pixels, at most Size/3.
	LogoSize int
	// ErrorCorrectionLevel is L, M, Q or H (any case).
	ErrorCorrectionLevel string
}

// OptionError reports an invalid option. Field is the JSON name of the
// option inside qr_code_options (for example "background_color").
type OptionError struct {
	Field   string
	Message string
}

func (e *OptionError) Error() string {
	return "qr_code_options." + e.Field + " " + e.Message
}

// ErrTooSmall is returned (wrapped) when the content needs more modules than
// the requested Size has pixels. Use a larger Size or a shorter content.
var ErrTooSmall = errors.New("qrcode: size too small for content")

// ErrContent is returned (wrapped) when the content is empty or cannot be
// encoded at the requested level (too long).
var ErrContent = errors.New("qrcode: cannot encode content")

// Normalized returns o with defaults filled in, colours and level in upper
// case. It does not validate: call Validate on the result or on o.
func (o Options) Normalized() Options {
	return o.withDefaults(o.Logo != "")
}

// withDefaults fills defaults; hasLogo selects the default level.
func (o Options) withDefaults(hasLogo bool) Options {
	if o.Size == 0 {
		o.Size = DefaultSize
	}
	o.Color = strings.ToUpper(strings.TrimSpace(o.Color))
	if o.Color == "" {
		o.Color = DefaultColor
	}
	o.BackgroundColor = strings.ToUpper(strings.TrimSpace(o.BackgroundColor))
	if o.BackgroundColor == "" {
		o.BackgroundColor = DefaultBackgroundColor
	}
	o.ErrorCorrectionLevel = strings.ToUpper(strings.TrimSpace(o.ErrorCorrectionLevel))
	if o.ErrorCorrectionLevel == "" {
		o.ErrorCorrectionLevel = DefaultLevel
		if hasLogo {
			o.ErrorCorrectionLevel = DefaultLogoLevel
		}
	}
	if o.LogoSize == 0 && hasLogo && o.Size > 0 {
		o.LogoSize = o.Size / DefaultLogoDivisor
	}
	return o
}

// Validate checks o after filling defaults (so zero values are valid) and
// returns an *OptionError naming the first bad option.
func Validate(o Options) error {
	o = o.Normalized()
	if o.Size < MinSize || o.Size > MaxSize {
		return &OptionError{"size", fmt.Sprintf("must be between %d and %d pixels, got %d", MinSize, MaxSize, o.Size)}
	}
	fg, err := parseColor(o.Color)
	if err != nil {
		return &OptionError{"color", err.Error()}
	}
	bg, err := parseColor(o.BackgroundColor)
	if err != nil {
		return &OptionError{"background_color", err.Error()}
	}
	if fg == bg {
		return &OptionError{"color", fmt.Sprintf("must differ from background_color (both %s)", o.Color)}
	}
	if _, err := parseLevel(o.ErrorCorrectionLevel); err != nil {
		return &OptionError{"error_correction_level", err.Error()}
	}
	if o.LogoSize < 0 {
		return &OptionError{"logo_size", fmt.Sprintf("must not be negative, got %d", o.LogoSize)}
	}
	if o.LogoSize*MaxLogoDivisor > o.Size {
		return &OptionError{"logo_size", fmt.Sprintf("must be at most a third of size (%d pixels for size %d), got %d", o.Size/MaxLogoDivisor, o.Size, o.LogoSize)}
	}
	if o.Logo != "" {
		if err := checkLogoURL(o.Logo); err != nil {
			return &OptionError{"logo", err.Error()}
		}
	}
	return nil
}

func checkLogoURL(s string) error {
	if len(s) > MaxLogoURLLength {
		return fmt.Errorf("must be at most %d characters, got %d", MaxLogoURLLength, len(s))
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	return nil
}

// parseColor reads "#RGB" or "#RRGGBB" (any case) as an opaque colour.
func parseColor(s string) (color.RGBA, error) {
	bad := fmt.Errorf("must be a hex color \"#RGB\" or \"#RRGGBB\", got %q", s)
	if len(s) != 4 && len(s) != 7 || s[0] != '#' {
		return color.RGBA{}, bad
	}
	var v [6]byte
	for i := 1; i < len(s); i++ {
		d, ok := hexDigit(s[i])
		if !ok {
			return color.RGBA{}, bad
		}
		v[i-1] = d
	}
	if len(s) == 4 {
		return color.RGBA{R: v[0] * 17, G: v[1] * 17, B: v[2] * 17, A: 0xff}, nil
	}
	return color.RGBA{R: v[0]<<4 | v[1], G: v[2]<<4 | v[3], B: v[4]<<4 | v[5], A: 0xff}, nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func parseLevel(s string) (qr.EncodeOption, error) {
	switch strings.ToUpper(s) {
	case "L":
		return qr.WithErrorCorrectionLevel(qr.ErrorCorrectionLow), nil
	case "M":
		return qr.WithErrorCorrectionLevel(qr.ErrorCorrectionMedium), nil
	case "Q":
		return qr.WithErrorCorrectionLevel(qr.ErrorCorrectionQuart), nil
	case "H":
		return qr.WithErrorCorrectionLevel(qr.ErrorCorrectionHighest), nil
	}
	return nil, fmt.Errorf("must be one of L, M, Q, H, got %q", s)
}

// prepared is what both renderers need: validated options, parsed colours
// and the encoded code.
type prepared struct {
	o      Options
	fg, bg color.RGBA
	code   *qr.QRCode
}

func prepare(content string, o Options, hasLogo bool) (*prepared, error) {
	o = o.withDefaults(hasLogo)
	if err := Validate(o); err != nil {
		return nil, err
	}
	if content == "" {
		return nil, fmt.Errorf("%w: empty content", ErrContent)
	}
	fg, _ := parseColor(o.Color)
	bg, _ := parseColor(o.BackgroundColor)
	level, _ := parseLevel(o.ErrorCorrectionLevel)
	code, err := qr.NewWith(content, level)
	if err != nil {
		return nil, fmt.Errorf("%w: %d bytes at level %s: %v", ErrContent, len(content), o.ErrorCorrectionLevel, err)
	}
	if need := code.Dimension() + 2*QuietZone; need > o.Size {
		return nil, fmt.Errorf("%w: %d modules with the quiet zone need at least %d pixels, size is %d", ErrTooSmall, need, need, o.Size)
	}
	return &prepared{o: o, fg: fg, bg: bg, code: code}, nil
}

// bitmapWriter is a qr.Writer that keeps the module matrix: [y][x], true
// for dark modules, without quiet zone.
type bitmapWriter struct{ bits [][]bool }

func (b *bitmapWriter) Write(m qr.Matrix) error { b.bits = m.Bitmap(); return nil }
func (b *bitmapWriter) Close() error            { return nil }

func (p *prepared) bitmap() ([][]bool, error) {
	var bw bitmapWriter
	if err := p.code.Save(&bw); err != nil {
		return nil, err
	}
	return bw.bits, nil
}
