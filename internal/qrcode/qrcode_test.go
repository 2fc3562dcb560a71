package qrcode

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"strconv"
	"strings"
	"testing"
)

const shortURL = "https://lnk.example.com/Ab3dE9x"

func TestNormalized(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   Options
		want Options
	}{
		{
			name: "zero value takes defaults",
			in:   Options{},
			want: Options{Size: 256, Color: "#000000", BackgroundColor: "#FFFFFF", ErrorCorrectionLevel: "M"},
		},
		{
			name: "logo switches level to Q and sets a logo size",
			in:   Options{Logo: "https://cdn.example.com/l.png"},
			want: Options{Size: 256, Color: "#000000", BackgroundColor: "#FFFFFF", ErrorCorrectionLevel: "Q",
				Logo: "https://cdn.example.com/l.png", LogoSize: 256 / DefaultLogoDivisor},
		},
		{
			name: "explicit values kept, colours and level upper-cased, digit count kept",
			in:   Options{Size: 512, Color: "#abc", BackgroundColor: "#ffeedd", ErrorCorrectionLevel: "h", LogoSize: 40},
			want: Options{Size: 512, Color: "#ABC", BackgroundColor: "#FFEEDD", ErrorCorrectionLevel: "H", LogoSize: 40},
		},
		{
			name: "explicit level kept with a logo",
			in:   Options{Logo: "https://x.example/l.png", ErrorCorrectionLevel: "L", LogoSize: 30},
			want: Options{Size: 256, Color: "#000000", BackgroundColor: "#FFFFFF", ErrorCorrectionLevel: "L",
				Logo: "https://x.example/l.png", LogoSize: 30},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.in.Normalized(); got != tc.want {
				t.Errorf("Normalized()\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		in        Options
		wantField string // "" means valid
		wantText  string
	}{
		{name: "zero value", in: Options{}},
		{name: "minimum size", in: Options{Size: MinSize}},
		{name: "maximum size", in: Options{Size: MaxSize}},
		{name: "short colours any case", in: Options{Color: "#aBc", BackgroundColor: "#FfF"}},
		{name: "long colours lower case", in: Options{Color: "#1a2b3c", BackgroundColor: "#fafafa"}},
		{name: "all levels", in: Options{ErrorCorrectionLevel: "q"}},
		{name: "logo a third of size", in: Options{Size: 300, Logo: "https://cdn.example.com/logo.png", LogoSize: 100}},
		{name: "logo size without logo", in: Options{Size: 300, LogoSize: 60}},

		{name: "size too small", in: Options{Size: 63}, wantField: "size", wantText: "between 64 and 2048 pixels, got 63"},
		{name: "size too large", in: Options{Size: 2049}, wantField: "size", wantText: "got 2049"},
		{name: "negative size", in: Options{Size: -5}, wantField: "size", wantText: "got -5"},
		{name: "colour name", in: Options{Color: "red"}, wantField: "color", wantText: `"#RGB" or "#RRGGBB", got "RED"`},
		{name: "colour without hash", in: Options{Color: "000000"}, wantField: "color"},
		{name: "colour with 5 digits", in: Options{Color: "#12345"}, wantField: "color"},
		{name: "colour with alpha", in: Options{Color: "#11223344"}, wantField: "color"},
		{name: "colour not hex", in: Options{Color: "#GG0000"}, wantField: "color"},
		{name: "background not hex", in: Options{BackgroundColor: "#12g"}, wantField: "background_color"},
		{name: "same colours in different notation", in: Options{Color: "#fff", BackgroundColor: "#FFFFFF"},
			wantField: "color", wantText: "must differ from background_color"},
		{name: "unknown level", in: Options{ErrorCorrectionLevel: "X"}, wantField: "error_correction_level",
			wantText: `one of L, M, Q, H, got "X"`},
		{name: "logo larger than a third", in: Options{Size: 300, LogoSize: 101}, wantField: "logo_size",
			wantText: "at most a third of size (100 pixels for size 300), got 101"},
		{name: "negative logo size", in: Options{LogoSize: -1}, wantField: "logo_size"},
		{name: "logo relative URL", in: Options{Logo: "logo.png"}, wantField: "logo", wantText: "absolute http or https URL"},
		{name: "logo javascript URL", in: Options{Logo: "javascript:alert(1)"}, wantField: "logo"},
		{name: "logo too long", in: Options{Logo: "https://x.example/" + strings.Repeat("a", MaxLogoURLLength)}, wantField: "logo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tc.in)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", tc.in, err)
				}
				return
			}
			var oe *OptionError
			if !errors.As(err, &oe) {
				t.Fatalf("Validate(%+v) = %v, want *OptionError", tc.in, err)
			}
			if oe.Field != tc.wantField {
				t.Errorf("field = %q, want %q (error %q)", oe.Field, tc.wantField, err)
			}
			if !strings.HasPrefix(err.Error(), "qr_code_options."+tc.wantField+" ") {
				t.Errorf("error %q does not name qr_code_options.%s", err, tc.wantField)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not contain %q", err, tc.wantText)
			}
		})
	}
}

// codeBitmap is the module matrix the renderers draw, for comparisons.
func codeBitmap(t *testing.T, content string, o Options, hasLogo bool) [][]bool {
	t.Helper()
	p, err := prepare(content, o, hasLogo)
	if err != nil {
		t.Fatal(err)
	}
	bits, err := p.bitmap()
	if err != nil {
		t.Fatal(err)
	}
	return bits
}

func rgba(t *testing.T, hex string) color.RGBA {
	t.Helper()
	c, err := parseColor(hex)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// raster is a decoded image as a flat slice of colours, quick to read
// many times (the race detector makes image.At slow).
type raster struct {
	w   int
	pix []color.RGBA
}

func rasterOf(img image.Image) raster {
	b := img.Bounds()
	r := raster{w: b.Dx(), pix: make([]color.RGBA, 0, b.Dx()*b.Dy())}
	if p, ok := img.(*image.Paletted); ok {
		pal := make([]color.RGBA, len(p.Palette))
		for i, c := range p.Palette {
			pal[i] = color.RGBAModel.Convert(c).(color.RGBA)
		}
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for _, ci := range p.Pix[p.PixOffset(b.Min.X, y):p.PixOffset(b.Max.X, y)] {
				r.pix = append(r.pix, pal[ci])
			}
		}
		return r
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r.pix = append(r.pix, color.RGBAModel.Convert(img.At(x, y)).(color.RGBA))
		}
	}
	return r
}

func pixel(r raster, x, y int) color.RGBA { return r.pix[y*r.w+x] }

func TestPNG(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		content string
		opts    Options
	}{
		{name: "defaults", content: shortURL, opts: Options{}},
		{name: "minimum size", content: shortURL, opts: Options{Size: 64}},
		{name: "size not a multiple of the modules", content: shortURL, opts: Options{Size: 257, Color: "#123", BackgroundColor: "#fed"}},
		{name: "odd size with colours", content: shortURL, opts: Options{Size: 333, Color: "#1A2B3C", BackgroundColor: "#F0E0D0"}},
		{name: "level H", content: shortURL, opts: Options{Size: 300, ErrorCorrectionLevel: "H"}},
		{name: "maximum size", content: shortURL, opts: Options{Size: 2048, Color: "#0000ff"}},
		{name: "long content small size", content: "https://lnk.example.com/" + strings.Repeat("x", 200), opts: Options{Size: 128, ErrorCorrectionLevel: "L"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := PNG(&buf, tc.content, tc.opts, nil); err != nil {
				t.Fatal(err)
			}
			decoded, err := png.Decode(&buf)
			if err != nil {
				t.Fatalf("output is not a PNG: %v", err)
			}
			img := rasterOf(decoded)
			o := tc.opts.Normalized()
			if b := decoded.Bounds(); b.Dx() != o.Size || b.Dy() != o.Size {
				t.Fatalf("size = %dx%d, want %dx%d", b.Dx(), b.Dy(), o.Size, o.Size)
			}
			fg, bg := rgba(t, o.Color), rgba(t, o.BackgroundColor)

			// Only the two colours appear, both of them.
			var nFG, nBG int
			for _, c := range img.pix {
				switch c {
				case fg:
					nFG++
				case bg:
					nBG++
				default:
					t.Fatalf("colour %v found, want only fg %v and bg %v", c, fg, bg)
				}
			}
			if nFG == 0 || nBG == 0 {
				t.Fatalf("%d fg and %d bg pixels, want both colours", nFG, nBG)
			}
			// Corners are quiet zone.
			for _, p := range [][2]int{{0, 0}, {o.Size - 1, 0}, {0, o.Size - 1}, {o.Size - 1, o.Size - 1}} {
				if c := pixel(img, p[0], p[1]); c != bg {
					t.Errorf("corner %v = %v, want background %v", p, c, bg)
				}
			}

			// Every module's centre has the module's colour, and the quiet
			// zone is at least QuietZone modules wide.
			bits := codeBitmap(t, tc.content, tc.opts, false)
			n := len(bits)
			block := o.Size / (n + 2*QuietZone)
			lead := QuietZone*block + (o.Size-(n+2*QuietZone)*block)/2
			for my, row := range bits {
				for mx, dark := range row {
					want := bg
					if dark {
						want = fg
					}
					x, y := lead+mx*block+block/2, lead+my*block+block/2
					if got := pixel(img, x, y); got != want {
						t.Fatalf("module (%d,%d) at pixel (%d,%d) = %v, want %v", mx, my, x, y, got, want)
					}
				}
			}
			for i := 0; i < lead; i++ {
				for j := 0; j < o.Size; j++ {
					if pixel(img, i, j) != bg || pixel(img, j, i) != bg {
						t.Fatalf("quiet zone pixel at offset %d/%d is not background", i, j)
					}
				}
			}
		})
	}
}

func solid(w, h int, c color.Color) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, c)
		}
	}
	return img
}

func TestPNGLogo(t *testing.T) {
	t.Parallel()
	red := color.RGBA{R: 255, A: 255}
	cases := []struct {
		name         string
		opts         Options
		logo         image.Image
		wantW, wantH int // red box expected, centred
	}{
		{name: "square logo scaled down", opts: Options{Size: 300, LogoSize: 100}, logo: solid(400, 400, red), wantW: 100, wantH: 100},
		{name: "square logo scaled up", opts: Options{Size: 300, LogoSize: 60}, logo: solid(10, 10, red), wantW: 60, wantH: 60},
		{name: "wide logo keeps aspect", opts: Options{Size: 400, LogoSize: 120}, logo: solid(200, 100, red), wantW: 120, wantH: 60},
		{name: "tall logo keeps aspect", opts: Options{Size: 400, LogoSize: 120}, logo: solid(50, 100, red), wantW: 60, wantH: 120},
		{name: "default logo size", opts: Options{Size: 500}, logo: solid(64, 64, red), wantW: 100, wantH: 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := PNG(&buf, shortURL, tc.opts, tc.logo); err != nil {
				t.Fatal(err)
			}
			decoded, err := png.Decode(&buf)
			if err != nil {
				t.Fatal(err)
			}
			img := rasterOf(decoded)
			size := decoded.Bounds().Dx()
			minX, minY, maxX, maxY := size, size, -1, -1
			for y := 0; y < size; y++ {
				for x := 0; x < size; x++ {
					if pixel(img, x, y) == red {
						minX, minY = min(minX, x), min(minY, y)
						maxX, maxY = max(maxX, x), max(maxY, y)
					}
				}
			}
			gotW, gotH := maxX-minX+1, maxY-minY+1
			if gotW != tc.wantW || gotH != tc.wantH {
				t.Fatalf("logo box = %dx%d, want %dx%d", gotW, gotH, tc.wantW, tc.wantH)
			}
			if minX != (size-tc.wantW)/2 || minY != (size-tc.wantH)/2 {
				t.Errorf("logo at (%d,%d), want centred at (%d,%d)", minX, minY, (size-tc.wantW)/2, (size-tc.wantH)/2)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	long := "https://lnk.example.com/" + strings.Repeat("y", 600)
	cases := []struct {
		name    string
		content string
		opts    Options
		wantIs  error
		wantOpt string
	}{
		{name: "bad option", content: shortURL, opts: Options{Color: "blue"}, wantOpt: "color"},
		{name: "empty content", content: "", wantIs: ErrContent},
		{name: "content beyond QR capacity", content: strings.Repeat("z", 3000), opts: Options{ErrorCorrectionLevel: "H"}, wantIs: ErrContent},
		{name: "size too small for content", content: long, opts: Options{Size: 64}, wantIs: ErrTooSmall},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for format, render := range map[string]func() error{
				"png": func() error { return PNG(io.Discard, tc.content, tc.opts, nil) },
				"svg": func() error { return SVG(io.Discard, tc.content, tc.opts, "") },
			} {
				err := render()
				if tc.wantOpt != "" {
					var oe *OptionError
					if !errors.As(err, &oe) || oe.Field != tc.wantOpt {
						t.Errorf("%s: err = %v, want *OptionError for %s", format, err, tc.wantOpt)
					}
					continue
				}
				if !errors.Is(err, tc.wantIs) {
					t.Errorf("%s: err = %v, want %v", format, err, tc.wantIs)
				}
			}
		})
	}
}

// svgDoc is the subset of the SVG the tests read.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Width   string   `xml:"width,attr"`
	Height  string   `xml:"height,attr"`
	ViewBox string   `xml:"viewBox,attr"`
	Rect    struct {
		Width  string `xml:"width,attr"`
		Height string `xml:"height,attr"`
		Fill   string `xml:"fill,attr"`
	} `xml:"rect"`
	Paths []struct {
		Fill string `xml:"fill,attr"`
		D    string `xml:"d,attr"`
	} `xml:"path"`
}

type svgImage struct {
	X         string `xml:"x,attr"`
	Y         string `xml:"y,attr"`
	Width     string `xml:"width,attr"`
	Height    string `xml:"height,attr"`
	Href      string `xml:"href,attr"`
	XlinkHref string `xml:"http://www.w3.org/1999/xlink href,attr"`
}

func parseSVG(t *testing.T, data []byte) (svgDoc, []svgImage) {
	t.Helper()
	var doc svgDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("SVG does not parse: %v\n%s", err, data)
	}
	var imgs struct {
		Images []svgImage `xml:"image"`
	}
	if err := xml.Unmarshal(data, &imgs); err != nil {
		t.Fatal(err)
	}
	return doc, imgs.Images
}

// rasterizePath fills a d×d grid from a path made of "MxYhNv1h-Nz"
// rectangles, failing on anything else.
func rasterizePath(t *testing.T, path string, d int) [][]bool {
	t.Helper()
	grid := make([][]bool, d)
	for i := range grid {
		grid[i] = make([]bool, d)
	}
	for _, cmd := range strings.Split(path, "M")[1:] {
		var x, y, w, back int
		if _, err := fmt.Sscanf(cmd, "%d %dh%dv1h-%dz", &x, &y, &w, &back); err != nil || w != back || w <= 0 {
			t.Fatalf("unexpected path command %q: %v", cmd, err)
		}
		for i := x; i < x+w; i++ {
			if grid[y][i] {
				t.Fatalf("module (%d,%d) drawn twice", i, y)
			}
			grid[y][i] = true
		}
	}
	return grid
}

func TestSVG(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		content string
		opts    Options
	}{
		{name: "defaults", content: shortURL},
		{name: "short colours", content: shortURL, opts: Options{Size: 512, Color: "#a0b", BackgroundColor: "#ffe"}},
		{name: "level L", content: shortURL, opts: Options{Size: 100, ErrorCorrectionLevel: "L"}},
		{name: "level H", content: shortURL, opts: Options{Size: 2048, ErrorCorrectionLevel: "H", Color: "#003366"}},
		{name: "unicode content", content: "https://lnk.example.com/héllo-世界", opts: Options{Size: 300}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := SVG(&buf, tc.content, tc.opts, ""); err != nil {
				t.Fatal(err)
			}
			doc, imgs := parseSVG(t, buf.Bytes())
			o := tc.opts.Normalized()
			bits := codeBitmap(t, tc.content, tc.opts, false)
			d := len(bits) + 2*QuietZone

			size := strconv.Itoa(o.Size)
			if doc.Width != size || doc.Height != size {
				t.Errorf("width/height = %s/%s, want %s", doc.Width, doc.Height, size)
			}
			if want := fmt.Sprintf("0 0 %d %d", d, d); doc.ViewBox != want {
				t.Errorf("viewBox = %q, want %q", doc.ViewBox, want)
			}
			if doc.Rect.Fill != o.BackgroundColor || doc.Rect.Width != strconv.Itoa(d) || doc.Rect.Height != strconv.Itoa(d) {
				t.Errorf("background rect = %+v, want %dx%d %s", doc.Rect, d, d, o.BackgroundColor)
			}
			if len(doc.Paths) != 1 || doc.Paths[0].Fill != o.Color {
				t.Fatalf("paths = %+v, want one with fill %s", doc.Paths, o.Color)
			}
			if len(imgs) != 0 {
				t.Errorf("unexpected <image> without logo: %+v", imgs)
			}
			grid := rasterizePath(t, doc.Paths[0].D, d)
			for y := 0; y < d; y++ {
				for x := 0; x < d; x++ {
					mx, my := x-QuietZone, y-QuietZone
					want := mx >= 0 && my >= 0 && mx < len(bits) && my < len(bits) && bits[my][mx]
					if grid[y][x] != want {
						t.Fatalf("module (%d,%d) dark = %v, want %v", x, y, grid[y][x], want)
					}
				}
			}
		})
	}
}

func TestSVGLogo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		href string
	}{
		{name: "plain URL", href: "https://cdn.example.com/logo.png?a=1&b=2"},
		{name: "attribute breakout", href: `"><script>alert(1)</script>`},
		{name: "single quote breakout", href: `'/><script>alert(1)</script>`},
		{name: "entity and newline", href: "x&amp;y\n<svg onload=alert(1)>"},
		{name: "data URI", href: "data:image/png;base64,iVBORw0KGgo="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			opts := Options{Size: 330, LogoSize: 110}
			if err := SVG(&buf, shortURL, opts, tc.href); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, bad := range []string{"<script", "<svg onload", `"><`} {
				if strings.Contains(tc.href, bad) && strings.Contains(out, bad) {
					t.Errorf("output contains unescaped %q:\n%s", bad, out)
				}
			}
			doc, imgs := parseSVG(t, buf.Bytes())
			if len(imgs) != 1 {
				t.Fatalf("images = %d, want 1:\n%s", len(imgs), out)
			}
			img := imgs[0]
			if img.Href != tc.href || img.XlinkHref != tc.href {
				t.Errorf("href = %q / xlink:href = %q, want %q", img.Href, img.XlinkHref, tc.href)
			}
			// 110 px of 330 px is a third of the viewBox, centred.
			var d int
			fmt.Sscanf(doc.ViewBox, "0 0 %d", &d)
			side, _ := strconv.ParseFloat(img.Width, 64)
			x, _ := strconv.ParseFloat(img.X, 64)
			if diff := side - float64(d)/3; diff > 1e-3 || diff < -1e-3 || img.Width != img.Height {
				t.Errorf("logo %sx%s, want %v modules square", img.Width, img.Height, float64(d)/3)
			}
			if diff := x - (float64(d)-side)/2; diff > 1e-3 || diff < -1e-3 || img.X != img.Y {
				t.Errorf("logo at (%s,%s), want centred", img.X, img.Y)
			}
			if len(doc.Paths) != 1 {
				t.Fatalf("paths = %d, want 1", len(doc.Paths))
			}
		})
	}
}

// A logo raises the default level to Q; an explicit level wins. The level
// shows in the code's dimension for content near a version boundary.
func TestDefaultLevel(t *testing.T) {
	t.Parallel()
	// 40 bytes: version 3 (29 modules) at M, version 4 (33) at Q.
	content := "https://lnk.example.com/abcdefghijklmnop"
	dim := func(o Options, href string) string {
		var buf bytes.Buffer
		if err := SVG(&buf, content, o, href); err != nil {
			t.Fatal(err)
		}
		doc, _ := parseSVG(t, buf.Bytes())
		return doc.ViewBox
	}
	levelM := dim(Options{ErrorCorrectionLevel: "M"}, "")
	levelQ := dim(Options{ErrorCorrectionLevel: "Q"}, "")
	if levelM == levelQ {
		t.Fatalf("test content does not separate M and Q: both %s", levelM)
	}
	cases := []struct {
		name string
		opts Options
		href string
		want string
	}{
		{name: "no logo defaults to M", want: levelM},
		{name: "logo href defaults to Q", href: "https://cdn.example.com/l.png", want: levelQ},
		{name: "logo option defaults to Q", opts: Options{Logo: "https://cdn.example.com/l.png"}, want: levelQ},
		{name: "explicit M with logo", opts: Options{ErrorCorrectionLevel: "m"}, href: "https://cdn.example.com/l.png", want: levelM},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := dim(tc.opts, tc.href); got != tc.want {
				t.Errorf("viewBox = %s, want %s", got, tc.want)
			}
		})
	}
}

func BenchmarkPNG(b *testing.B) {
	for _, size := range []int{256, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := PNG(&buf, shortURL, Options{Size: size}, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes/img")
		})
	}
	b.Run("size=256/logo", func(b *testing.B) {
		logo := solid(128, 128, color.RGBA{R: 200, A: 255})
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := PNG(&buf, shortURL, Options{Size: 256, LogoSize: 64}, logo); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "bytes/img")
	})
}

func BenchmarkSVG(b *testing.B) {
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := SVG(&buf, shortURL, Options{Size: 256}, "https://cdn.example.com/logo.png"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/img")
}
