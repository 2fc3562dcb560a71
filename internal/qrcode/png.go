package qrcode

import (
	"image"
	"image/color"
	"image/png"
	"io"

	"github.com/yeqown/go-qrcode/writer/standard"
	"golang.org/x/image/draw"
)

// PNG writes the QR code of content as a Size×Size PNG. logo, when not nil,
// is drawn centred over the code, scaled to fit LogoSize×LogoSize; the
// default error correction level is then Q. Errors: *OptionError for bad
// options, ErrContent, ErrTooSmall (wrapped), or the writer's error.
func PNG(w io.Writer, content string, o Options, logo image.Image) error {
	p, err := prepare(content, o, logo != nil || o.Logo != "")
	if err != nil {
		return err
	}
	o = p.o

	modules := p.code.Dimension() + 2*QuietZone
	block := o.Size / modules // >= 1: prepare checked modules <= Size
	if block > 255 {          // the writer's limit; unreachable with MaxSize 2048
		block = 255
	}
	// The quiet zone takes the pixels left over by whole-pixel modules, so
	// the image is exactly Size wide; an odd leftover goes right and bottom.
	extra := o.Size - modules*block
	lead := QuietZone*block + extra/2
	trail := QuietZone*block + extra - extra/2

	opts := []standard.ImageOption{
		standard.WithQRWidth(uint8(block)),
		standard.WithBorderWidth(lead, trail, trail, lead), // top, right, bottom, left
		standard.WithFgColor(p.fg),
		standard.WithBgColor(p.bg),
		standard.WithCustomShape(pixelRect{}),
		standard.WithCustomImageEncoder(pngEncoder{fg: p.fg, bg: p.bg, twoColours: logo == nil}),
	}
	if logo != nil && o.LogoSize > 0 {
		if scaled := scaleToFit(logo, o.LogoSize); scaled != nil {
			// The writer centres the logo and refuses (with a log line) one
			// wider than 1/multiplier of the image; Validate keeps LogoSize
			// within Size/MaxLogoDivisor, so it always fits.
			opts = append(opts,
				standard.WithLogoImage(scaled),
				standard.WithLogoSizeMultiplier(MaxLogoDivisor))
		}
	}
	return p.code.Save(standard.NewWithWriter(nopCloser{w}, opts...))
}

// scaleToFit scales img to fit a box×box square, keeping its aspect ratio.
// It returns nil for an empty image.
func scaleToFit(img image.Image, box int) image.Image {
	b := img.Bounds()
	if b.Dx() <= 0 || b.Dy() <= 0 {
		return nil
	}
	w, h := box, box
	if b.Dx() > b.Dy() {
		h = max(1, box*b.Dy()/b.Dx())
	} else if b.Dy() > b.Dx() {
		w = max(1, box*b.Dx()/b.Dy())
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	return dst
}

// nopCloser keeps the writer from closing the caller's io.Writer.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// pixelRect draws a module as a plain pixel rectangle straight into the
// writer's RGBA canvas. The writer's own rectangle goes through gg's
// anti-aliasing rasterizer, which gives the same pixels (module edges are
// whole pixels) but was about 40% of the render time.
type pixelRect struct{}

func (pixelRect) Draw(c *standard.DrawContext) {
	x, y := c.UpperLeft()
	w, h := c.Edge()
	r := image.Rect(int(x), int(y), int(x)+w, int(y)+h)
	if img, ok := c.Image().(*image.RGBA); ok {
		draw.Draw(img, r, &image.Uniform{C: c.Color()}, image.Point{}, draw.Src)
		return
	}
	c.DrawRectangle(x, y, float64(w), float64(h))
	c.SetColor(c.Color())
	c.Fill()
}

func (s pixelRect) DrawFinder(c *standard.DrawContext) { s.Draw(c) }

// pngEncoder writes a code without a logo as a two-colour paletted PNG
// (1 bit per pixel: about 4x faster to compress and smaller than RGB) and
// anything else as it is.
type pngEncoder struct {
	fg, bg     color.RGBA
	twoColours bool
}

func (e pngEncoder) Encode(w io.Writer, img image.Image) error {
	if src, ok := img.(*image.RGBA); ok && e.twoColours {
		if pal, ok := toPaletted(src, e.bg, e.fg); ok {
			img = pal
		}
	}
	enc := png.Encoder{CompressionLevel: png.DefaultCompression}
	return enc.Encode(w, img)
}

// toPaletted maps src onto the palette {bg, fg}; ok is false when a pixel
// has another colour.
func toPaletted(src *image.RGBA, bg, fg color.RGBA) (*image.Paletted, bool) {
	b := src.Bounds()
	dst := image.NewPaletted(b, color.Palette{bg, fg})
	for y := b.Min.Y; y < b.Max.Y; y++ {
		row := src.Pix[src.PixOffset(b.Min.X, y):src.PixOffset(b.Max.X, y)]
		out := dst.Pix[dst.PixOffset(b.Min.X, y):dst.PixOffset(b.Max.X, y)]
		for i := range out {
			p := row[4*i : 4*i+4 : 4*i+4]
			switch {
			case p[0] == bg.R && p[1] == bg.G && p[2] == bg.B && p[3] == bg.A:
				out[i] = 0
			case p[0] == fg.R && p[1] == fg.G && p[2] == fg.B && p[3] == fg.A:
				out[i] = 1
			default:
				return nil, false
			}
		}
	}
	return dst, true
}
