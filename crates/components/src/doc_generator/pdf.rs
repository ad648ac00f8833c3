//! Markdown → PDF with krilla: system fonts found at run time (CJK included, with
//! per-character fallback), simple line layout, and RAGFlow's page overlay (header and
//! footer text, timestamp, page numbers, watermark).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use krilla::Document;
use krilla::color::luma;
use krilla::geom::{PathBuilder, Point, Rect, Transform};
use krilla::num::NormalizedF32;
use krilla::page::PageSettings;
use krilla::paint::{Fill, Stroke};
use krilla::surface::Surface;
use krilla::text::{Font, GlyphId, KrillaGlyph};
use skrifa::instance::{LocationRef, Size};
use skrifa::raw::{FileRef, TableProvider};
use skrifa::string::StringId;
use skrifa::{FontRef, MetadataProvider};

use super::markdown::{Block, BlockKind, Span, Style};

/// US Letter, LaTeX's (and so pandoc's) default paper.
const PAGE_W: f32 = 612.0;
const PAGE_H: f32 = 792.0;
const MARGIN: f32 = 72.0;
/// RAGFlow's overlay margin and font size.
const OVERLAY_MARGIN: f32 = 36.0;
const OVERLAY_SIZE: f32 = 9.0;
const INDENT: f32 = 18.0;

/// Where an installed font is looked for.
const FONT_DIRS: &[&str] = &[
    "/usr/share/fonts",
    "/usr/local/share/fonts",
    "/Library/Fonts",
    "/System/Library/Fonts",
    "C:\\Windows\\Fonts",
];

/// Font files by preference (lower-case file names). Latin faces first (they look
/// better for Latin text), then CJK faces, which also cover Latin.
const REGULAR: &[&str] = &[
    "dejavusans.ttf",
    "liberationsans-regular.ttf",
    "notosans-regular.ttf",
    "arial.ttf",
    "notosanscjk-regular.ttc",
    "notosanscjksc-regular.otf",
    "notosanssc-regular.otf",
    "notosanssc-regular.ttf",
    "sourcehansans-regular.ttc",
    "sourcehansanssc-regular.otf",
    "wqy-microhei.ttc",
    "wqy-zenhei.ttc",
    "droidsansfallbackfull.ttf",
    "droidsansfallback.ttf",
    "msyh.ttc",
    "pingfang.ttc",
    "arialuni.ttf",
];
const BOLD: &[&str] = &[
    "dejavusans-bold.ttf",
    "liberationsans-bold.ttf",
    "notosans-bold.ttf",
    "arialbd.ttf",
    "notosanscjk-bold.ttc",
    "notosanscjksc-bold.otf",
    "notosanssc-bold.otf",
    "sourcehansans-bold.ttc",
    "msyhbd.ttc",
];
const ITALIC: &[&str] = &[
    "dejavusans-oblique.ttf",
    "liberationsans-italic.ttf",
    "notosans-italic.ttf",
    "ariali.ttf",
];
const BOLD_ITALIC: &[&str] = &[
    "dejavusans-boldoblique.ttf",
    "liberationsans-bolditalic.ttf",
    "notosans-bolditalic.ttf",
    "arialbi.ttf",
];
const MONO: &[&str] = &[
    "dejavusansmono.ttf",
    "liberationmono-regular.ttf",
    "notosansmono-regular.ttf",
    "cour.ttf",
];

/// What the PDF writer needs besides the markdown.
#[derive(Debug, Clone, Default)]
pub struct PdfOptions {
    /// Body font size (headings are 6, 4 and 2 points larger).
    pub font_size: f32,
    /// Text at the top left of every page.
    pub header: String,
    /// Text at the bottom left of every page.
    pub footer: String,
    /// Large diagonal text behind every page.
    pub watermark: String,
    /// `Page N` at the bottom right.
    pub page_numbers: bool,
    /// The timestamp line at the bottom centre, when wanted.
    pub timestamp: Option<String>,
    /// A font file to prefer (`CANVAS_PDF_FONT`).
    pub font_file: Option<PathBuf>,
    /// The home directory (for `~/.fonts`, `~/.local/share/fonts`).
    pub home: Option<PathBuf>,
    /// Where fonts are looked for instead of the system's folders (tests).
    pub font_dirs: Option<Vec<PathBuf>>,
}

/// One loaded font face.
struct Face {
    data: Arc<Vec<u8>>,
    index: u32,
    upem: f32,
    font: Font,
    /// Glyph id and advance (em units) per character, `None` when missing.
    cache: HashMap<char, Option<(u32, f32)>>,
}

impl Face {
    fn load(path: &Path) -> Result<Face, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read font {}: {e}", path.display()))?;
        let data = Arc::new(bytes);
        let index = pick_index(&data);
        let font_ref = FontRef::from_index(&data, index)
            .map_err(|e| format!("cannot read font {}: {e}", path.display()))?;
        let upem = font_ref.head().map(|h| h.units_per_em()).unwrap_or(1000) as f32;
        let font = Font::new(data.clone().into(), index)
            .ok_or_else(|| format!("cannot use font {}", path.display()))?;
        Ok(Face {
            data,
            index,
            upem: if upem > 0.0 { upem } else { 1000.0 },
            font,
            cache: HashMap::new(),
        })
    }

    fn glyph(&mut self, c: char) -> Option<(u32, f32)> {
        if let Some(g) = self.cache.get(&c) {
            return *g;
        }
        let g = FontRef::from_index(&self.data, self.index)
            .ok()
            .and_then(|f| {
                let gid = f.charmap().map(c)?;
                let adv = f
                    .glyph_metrics(Size::unscaled(), LocationRef::default())
                    .advance_width(gid)
                    .unwrap_or(0.0);
                Some((gid.to_u32(), adv / self.upem))
            })
            .filter(|(gid, _)| *gid != 0);
        self.cache.insert(c, g);
        g
    }
}

/// In a collection, the Simplified Chinese face when there is one (Noto Sans CJK
/// lists Japanese first), else the first.
fn pick_index(data: &[u8]) -> u32 {
    let Ok(FileRef::Collection(c)) = FileRef::new(data) else {
        return 0;
    };
    for i in 0..c.len() {
        if let Ok(f) = c.get(i) {
            let name = f
                .localized_strings(StringId::FAMILY_NAME)
                .english_or_first()
                .map(|s| s.to_string())
                .unwrap_or_default();
            if name.ends_with(" SC") || name.contains(" SC ") {
                return i;
            }
        }
    }
    0
}

/// Which face set a piece of text asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Variant {
    Regular,
    Bold,
    Italic,
    BoldItalic,
    Mono,
}

impl Variant {
    fn of(s: Style) -> Variant {
        match (s.code, s.bold, s.italic) {
            (true, _, _) => Variant::Mono,
            (_, true, true) => Variant::BoldItalic,
            (_, true, false) => Variant::Bold,
            (_, false, true) => Variant::Italic,
            _ => Variant::Regular,
        }
    }
}

/// A face a character resolved to, with the synthetic styling it still needs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Resolved {
    face: usize,
    gid: u32,
    advance: f32,
    fake_bold: bool,
    fake_italic: bool,
}

/// The fonts of one document, loaded lazily.
struct Fonts {
    /// `CANVAS_PDF_FONT`, first in every chain.
    user: Option<PathBuf>,
    /// Candidate files in preference order per variant: (path, is bold, is italic).
    chains: HashMap<Variant, Vec<(PathBuf, bool, bool)>>,
    faces: Vec<Face>,
    /// Loaded face per path (`None`: unreadable).
    loaded: HashMap<PathBuf, Option<usize>>,
    cache: HashMap<(Variant, char), Option<Resolved>>,
}

impl Fonts {
    fn new(opts: &PdfOptions) -> Result<Fonts, String> {
        let mut dirs: Vec<PathBuf> = match &opts.font_dirs {
            Some(d) => d.clone(),
            None => FONT_DIRS.iter().map(PathBuf::from).collect(),
        };
        if let (None, Some(h)) = (&opts.font_dirs, &opts.home) {
            dirs.push(h.join(".fonts"));
            dirs.push(h.join(".local/share/fonts"));
        }
        let found = scan(&dirs);
        let pick = |names: &[&str]| -> Vec<PathBuf> {
            names
                .iter()
                .filter_map(|n| found.get(*n).cloned())
                .collect()
        };
        let mut user = Vec::new();
        if let Some(f) = &opts.font_file {
            if !f.is_file() {
                return Err(format!(
                    "CANVAS_PDF_FONT names {}, which is not a font file",
                    f.display()
                ));
            }
            user.push((f.clone(), false, false));
        }
        let tag = |v: Vec<PathBuf>, b: bool, i: bool| {
            v.into_iter().map(move |p| (p, b, i)).collect::<Vec<_>>()
        };
        let regular = tag(pick(REGULAR), false, false);
        let bold = tag(pick(BOLD), true, false);
        let italic = tag(pick(ITALIC), false, true);
        let bold_italic = tag(pick(BOLD_ITALIC), true, true);
        let mono = tag(pick(MONO), false, false);
        let cat = |parts: &[&Vec<(PathBuf, bool, bool)>]| {
            let mut v = user.clone();
            for p in parts {
                v.extend(p.iter().cloned());
            }
            v
        };
        let chains = HashMap::from([
            (Variant::Regular, cat(&[&regular])),
            (Variant::Bold, cat(&[&bold, &regular])),
            (Variant::Italic, cat(&[&italic, &regular])),
            (
                Variant::BoldItalic,
                cat(&[&bold_italic, &bold, &italic, &regular]),
            ),
            (Variant::Mono, cat(&[&mono, &regular])),
        ]);
        Ok(Fonts {
            user: opts.font_file.clone(),
            chains,
            faces: Vec::new(),
            loaded: HashMap::new(),
            cache: HashMap::new(),
        })
    }

    fn face_of(&mut self, path: &Path) -> Result<Option<usize>, String> {
        if let Some(f) = self.loaded.get(path) {
            return Ok(*f);
        }
        let id = match Face::load(path) {
            Ok(face) => {
                self.faces.push(face);
                Some(self.faces.len() - 1)
            }
            // The user's own font must load; a broken system font is skipped.
            Err(e) if self.is_user(path) => return Err(format!("CANVAS_PDF_FONT: {e}")),
            Err(_) => None,
        };
        self.loaded.insert(path.to_path_buf(), id);
        Ok(id)
    }

    fn is_user(&self, path: &Path) -> bool {
        self.user.as_deref() == Some(path)
    }

    /// The face and glyph for `c` in `style`, or an error naming what to install.
    fn resolve(&mut self, c: char, style: Style) -> Result<Option<Resolved>, String> {
        let v = Variant::of(style);
        if let Some(r) = self.cache.get(&(v, c)) {
            return Ok(*r);
        }
        let chain = self.chains.get(&v).cloned().unwrap_or_default();
        let mut found = None;
        for (path, is_bold, is_italic) in &chain {
            let Some(fid) = self.face_of(path)? else {
                continue;
            };
            if let Some((gid, advance)) = self.faces[fid].glyph(c) {
                found = Some(Resolved {
                    face: fid,
                    gid,
                    advance,
                    fake_bold: (style.bold && !style.code) && !is_bold,
                    fake_italic: style.italic && !is_italic,
                });
                break;
            }
        }
        if found.is_none() && !c.is_whitespace() && !c.is_control() {
            if is_cjk(c) {
                return Err(format!(
                    "no installed font has the character '{c}' (U+{:04X}): install a CJK font (Debian/Ubuntu: apt-get install fonts-noto-cjk, or fonts-wqy-microhei) or set CANVAS_PDF_FONT to a .ttf/.otf/.ttc file that has it",
                    c as u32
                ));
            }
            if chain.is_empty() {
                return Err("no font found for PDF output: install one (Debian/Ubuntu: apt-get install fonts-dejavu-core fonts-noto-cjk) or set CANVAS_PDF_FONT to a .ttf/.otf/.ttc file".into());
            }
        }
        self.cache.insert((v, c), found);
        Ok(found)
    }

    /// Split `text` into runs of one face, with their glyphs.
    fn shape(&mut self, text: &str, style: Style) -> Result<Vec<Run>, String> {
        let mut runs: Vec<Run> = Vec::new();
        for (i, c) in text.char_indices() {
            let end = i + c.len_utf8();
            let r = match self.resolve(c, style)? {
                Some(r) => r,
                None => {
                    // A space or a symbol no font has: a gap (spaces) or the first
                    // face's missing-glyph box.
                    let Some(first) = self.first_face(style)? else {
                        continue;
                    };
                    let advance = if c.is_whitespace() { 0.25 } else { 0.5 };
                    Resolved {
                        face: first,
                        gid: 0,
                        advance,
                        fake_bold: false,
                        fake_italic: false,
                    }
                }
            };
            let glyph = KrillaGlyph {
                glyph_id: GlyphId::new(r.gid),
                text_range: 0..0,
                x_advance: r.advance,
                x_offset: 0.0,
                y_offset: 0.0,
                y_advance: 0.0,
                location: None,
            };
            match runs.last_mut() {
                Some(run)
                    if run.face == r.face
                        && run.fake_bold == r.fake_bold
                        && run.fake_italic == r.fake_italic =>
                {
                    let start = run.text.len();
                    run.text.push(c);
                    run.glyphs.push(KrillaGlyph {
                        text_range: start..run.text.len(),
                        ..glyph
                    });
                    run.width_em += r.advance;
                }
                _ => runs.push(Run {
                    face: r.face,
                    fake_bold: r.fake_bold,
                    fake_italic: r.fake_italic,
                    glyphs: vec![KrillaGlyph {
                        text_range: 0..end - i,
                        ..glyph
                    }],
                    text: c.to_string(),
                    width_em: r.advance,
                }),
            }
        }
        Ok(runs)
    }

    fn first_face(&mut self, style: Style) -> Result<Option<usize>, String> {
        let chain = self
            .chains
            .get(&Variant::of(style))
            .cloned()
            .unwrap_or_default();
        for (p, _, _) in &chain {
            if let Some(f) = self.face_of(p)? {
                return Ok(Some(f));
            }
        }
        Ok(None)
    }

    fn width(&mut self, text: &str, style: Style, size: f32) -> Result<f32, String> {
        Ok(self
            .shape(text, style)?
            .iter()
            .map(|r| r.width_em)
            .sum::<f32>()
            * size)
    }
}

/// Font files under `dirs` by lower-case file name (first found wins).
fn scan(dirs: &[PathBuf]) -> HashMap<String, PathBuf> {
    let mut out = HashMap::new();
    let mut stack: Vec<(PathBuf, usize)> = dirs.iter().map(|d| (d.clone(), 0)).collect();
    let mut seen = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            seen += 1;
            // A bound, so a huge or looping tree cannot stall a run.
            if seen > 50_000 {
                return out;
            }
            let p = e.path();
            if p.is_dir() {
                if depth < 6 {
                    stack.push((p, depth + 1));
                }
            } else if let Some(n) = p.file_name() {
                out.entry(n.to_string_lossy().to_lowercase()).or_insert(p);
            }
        }
    }
    out
}

/// Han, kana, Hangul and CJK punctuation/full-width forms: text that needs a CJK font.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF | 0x2E80..=0x2FDF | 0x3000..=0x30FF | 0x3100..=0x31FF
        | 0x3200..=0x4DBF | 0x4E00..=0x9FFF | 0xA960..=0xA97F | 0xAC00..=0xD7FF
        | 0xF900..=0xFAFF | 0xFE30..=0xFE4F | 0xFF00..=0xFFEF | 0x20000..=0x3FFFF)
}

/// Glyphs of one face.
struct Run {
    face: usize,
    fake_bold: bool,
    fake_italic: bool,
    glyphs: Vec<KrillaGlyph>,
    text: String,
    width_em: f32,
}

/// Something to draw on a page (y grows downwards, text `y` is the baseline).
enum Op {
    Text {
        x: f32,
        y: f32,
        size: f32,
        run: Run,
        gray: u8,
    },
    Rect {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        gray: u8,
    },
    Line {
        x1: f32,
        x2: f32,
        y: f32,
    },
}

/// Put `text` on the last line at `x`: appended to the previous piece when it has the
/// same style (one text object per styled stretch, so extracted text keeps its words
/// together), the space before it included.
fn add(lines: &mut [Vec<(f32, String, Style)>], x: f32, text: &str, st: Style, space: bool) {
    let Some(line) = lines.last_mut() else { return };
    match line.last_mut() {
        Some((_, t, s)) if *s == st => {
            if space {
                t.push(' ');
            }
            t.push_str(text);
        }
        _ => line.push((x, text.to_string(), st)),
    }
}

/// Pages of drawing operations.
struct Layout<'f> {
    fonts: &'f mut Fonts,
    pages: Vec<Vec<Op>>,
    y: f32,
}

/// A breakable piece of a paragraph.
enum Item {
    /// Text that stays on one line: pieces in their styles.
    Unit(Vec<(String, Style)>),
    /// A space (dropped at a line end).
    Space(Style),
    /// A hard line break.
    Break,
}

fn items(spans: &[Span]) -> Vec<Item> {
    let mut out = Vec::new();
    let mut unit: Vec<(String, Style)> = Vec::new();
    let end_unit = |unit: &mut Vec<(String, Style)>, out: &mut Vec<Item>| {
        if !unit.is_empty() {
            out.push(Item::Unit(std::mem::take(unit)));
        }
    };
    for s in spans {
        for c in s.text.chars() {
            if c == '\n' {
                end_unit(&mut unit, &mut out);
                out.push(Item::Break);
            } else if c.is_whitespace() {
                end_unit(&mut unit, &mut out);
                if !matches!(out.last(), Some(Item::Space(_))) {
                    out.push(Item::Space(s.style));
                }
            } else if is_cjk(c) {
                // CJK text may break between any two characters.
                end_unit(&mut unit, &mut out);
                out.push(Item::Unit(vec![(c.to_string(), s.style)]));
            } else {
                match unit.last_mut() {
                    Some((t, st)) if *st == s.style => t.push(c),
                    _ => unit.push((c.to_string(), s.style)),
                }
            }
        }
    }
    end_unit(&mut unit, &mut out);
    out
}

impl Layout<'_> {
    fn page(&mut self) -> &mut Vec<Op> {
        if self.pages.is_empty() {
            self.pages.push(Vec::new());
        }
        let n = self.pages.len() - 1;
        &mut self.pages[n]
    }

    /// Room for `h` more points on this page, or a new page.
    fn need(&mut self, h: f32) {
        if self.pages.is_empty() || (self.y + h > PAGE_H - MARGIN && self.y > MARGIN) {
            self.pages.push(Vec::new());
            self.y = MARGIN;
        }
    }

    fn text_op(
        &mut self,
        x: f32,
        baseline: f32,
        text: &str,
        style: Style,
        size: f32,
    ) -> Result<f32, String> {
        let mut x = x;
        for run in self.fonts.shape(text, style)? {
            let w = run.width_em * size;
            self.page().push(Op::Text {
                x,
                y: baseline,
                size,
                run,
                gray: 0,
            });
            x += w;
        }
        Ok(x)
    }

    /// Lay out a paragraph in `[x0, x0 + width]`, wrapped greedily.
    fn paragraph(
        &mut self,
        spans: &[Span],
        x0: f32,
        width: f32,
        size: f32,
        marker: Option<&str>,
    ) -> Result<(), String> {
        let line_h = size * 1.4;
        let mut lines: Vec<Vec<(f32, String, Style)>> = vec![Vec::new()];
        let mut x = 0.0f32;
        let mut pending_space: Option<f32> = None;
        for it in items(spans) {
            match it {
                Item::Break => {
                    lines.push(Vec::new());
                    x = 0.0;
                    pending_space = None;
                }
                Item::Space(st) => {
                    if x > 0.0 {
                        pending_space = Some(self.fonts.width(" ", st, size)?);
                    }
                }
                Item::Unit(pieces) => {
                    let mut w = 0.0;
                    for (t, st) in &pieces {
                        w += self.fonts.width(t, *st, size)?;
                    }
                    let sp = pending_space.take().unwrap_or(0.0);
                    let mut space = sp > 0.0;
                    if x > 0.0 && x + sp + w > width {
                        lines.push(Vec::new());
                        x = 0.0;
                        space = false;
                    } else {
                        x += sp;
                    }
                    if w <= width || x > 0.0 {
                        for (t, st) in pieces {
                            let pw = self.fonts.width(&t, st, size)?;
                            add(&mut lines, x, &t, st, std::mem::take(&mut space));
                            x += pw;
                        }
                    } else {
                        // Longer than a line: break between characters.
                        for (t, st) in pieces {
                            for c in t.chars() {
                                let cw = self.fonts.width(&c.to_string(), st, size)?;
                                if x > 0.0 && x + cw > width {
                                    lines.push(Vec::new());
                                    x = 0.0;
                                }
                                add(&mut lines, x, &c.to_string(), st, false);
                                x += cw;
                            }
                        }
                    }
                }
            }
        }
        for (i, line) in lines.into_iter().enumerate() {
            self.need(line_h);
            let baseline = self.y + size;
            if i == 0
                && let Some(m) = marker
            {
                self.text_op(x0 - INDENT, baseline, m, Style::default(), size)?;
            }
            for (dx, t, st) in line {
                self.text_op(x0 + dx, baseline, &t, st, size)?;
            }
            self.y += line_h;
        }
        Ok(())
    }

    fn code(&mut self, text: &str, x0: f32, width: f32, size: f32) -> Result<(), String> {
        let style = Style {
            code: true,
            ..Style::default()
        };
        let line_h = size * 1.35;
        self.y += size * 0.3;
        for raw in text.split('\n') {
            // Tabs as four spaces; long lines wrap between characters.
            let line = raw.replace('\t', "    ");
            let mut rows: Vec<String> = vec![String::new()];
            let mut x = 0.0;
            for c in line.chars() {
                let cw = self.fonts.width(&c.to_string(), style, size)?;
                if x + cw > width - 8.0 && x > 0.0 {
                    rows.push(String::new());
                    x = 0.0;
                }
                if let Some(r) = rows.last_mut() {
                    r.push(c);
                }
                x += cw;
            }
            for r in rows {
                self.need(line_h);
                let y = self.y;
                self.page().push(Op::Rect {
                    x: x0,
                    y,
                    w: width,
                    h: line_h,
                    gray: 242,
                });
                self.text_op(x0 + 4.0, y + size, &r, style, size)?;
                self.y += line_h;
            }
        }
        self.y += size * 0.3;
        Ok(())
    }
}

/// Render the blocks to PDF bytes.
pub fn render(blocks: &[Block], opts: &PdfOptions) -> Result<Vec<u8>, String> {
    let mut fonts = Fonts::new(opts)?;
    let fs = opts.font_size.max(1.0);
    let text_w = PAGE_W - 2.0 * MARGIN;
    let mut lay = Layout {
        fonts: &mut fonts,
        pages: Vec::new(),
        y: MARGIN,
    };
    lay.need(0.0);
    for b in blocks {
        let x0 = MARGIN + INDENT * b.indent as f32;
        let w = (text_w - INDENT * b.indent as f32).max(INDENT * 4.0);
        match &b.kind {
            BlockKind::Heading(l) => {
                let size = match l {
                    1 => fs + 6.0,
                    2 => fs + 4.0,
                    3 => fs + 2.0,
                    _ => fs,
                };
                lay.y += size * 0.6;
                lay.need(size * 3.0);
                let spans: Vec<Span> = b
                    .spans
                    .iter()
                    .map(|s| Span {
                        text: s.text.clone(),
                        style: Style {
                            bold: true,
                            ..s.style
                        },
                    })
                    .collect();
                lay.paragraph(&spans, x0, w, size, None)?;
                lay.y += size * 0.3;
            }
            BlockKind::Paragraph => {
                lay.paragraph(&b.spans, x0, w, fs, None)?;
                lay.y += fs * 0.6;
            }
            BlockKind::Item(m) => {
                let marker = if m == "•" && lay.fonts.resolve('•', Style::default())?.is_none()
                {
                    "-"
                } else {
                    m.as_str()
                };
                lay.paragraph(&b.spans, x0 + INDENT, w - INDENT, fs, Some(marker))?;
                lay.y += fs * 0.25;
            }
            BlockKind::Code => {
                lay.code(&b.text(), x0, w, (fs - 2.0).max(8.0))?;
                lay.y += fs * 0.4;
            }
            BlockKind::Rule => {
                lay.need(fs);
                let y = lay.y + fs * 0.5;
                lay.page().push(Op::Line {
                    x1: MARGIN,
                    x2: PAGE_W - MARGIN,
                    y,
                });
                lay.y += fs;
            }
        }
    }
    let pages = std::mem::take(&mut lay.pages);
    let mut doc = Document::new();
    for (i, ops) in pages.into_iter().enumerate() {
        let settings =
            PageSettings::from_wh(PAGE_W, PAGE_H).ok_or_else(|| "invalid page size".to_string())?;
        let mut page = doc.start_page_with(settings);
        let mut s = page.surface();
        let mut overlay = overlay_ops(&mut fonts, opts, i + 1)?;
        // The watermark goes under the text, as RAGFlow's overlay page is merged last
        // but drawn translucent.
        if !opts.watermark.is_empty() {
            watermark(&mut s, &mut fonts, &opts.watermark)?;
        }
        for op in ops.into_iter().chain(overlay.drain(..)) {
            draw(&mut s, &fonts, op);
        }
        s.finish();
        page.finish();
    }
    doc.finish().map_err(|e| format!("{e:?}"))
}

fn overlay_ops(fonts: &mut Fonts, opts: &PdfOptions, page: usize) -> Result<Vec<Op>, String> {
    let mut ops = Vec::new();
    let st = Style::default();
    let size = OVERLAY_SIZE;
    let mut put = |fonts: &mut Fonts, x: f32, y: f32, text: &str| -> Result<(), String> {
        let mut x = x;
        for run in fonts.shape(text, st)? {
            let w = run.width_em * size;
            ops.push(Op::Text {
                x,
                y,
                size,
                run,
                gray: 90,
            });
            x += w;
        }
        Ok(())
    };
    let top = OVERLAY_MARGIN - 8.0;
    let bottom = PAGE_H - (OVERLAY_MARGIN - 8.0);
    if !opts.header.is_empty() {
        put(fonts, OVERLAY_MARGIN, top, &opts.header)?;
    }
    if !opts.footer.is_empty() {
        put(fonts, OVERLAY_MARGIN, bottom, &opts.footer)?;
    }
    if let Some(ts) = &opts.timestamp {
        let w = fonts.width(ts, st, size)?;
        put(fonts, (PAGE_W - w) / 2.0, bottom, ts)?;
    }
    if opts.page_numbers {
        let t = format!("Page {page}");
        let w = fonts.width(&t, st, size)?;
        put(fonts, PAGE_W - OVERLAY_MARGIN - w, bottom, &t)?;
    }
    Ok(ops)
}

fn watermark(s: &mut Surface<'_>, fonts: &mut Fonts, text: &str) -> Result<(), String> {
    let size = 48.0;
    let st = Style::default();
    let w = fonts.width(text, st, size)?;
    let (sin, cos) = (-std::f32::consts::FRAC_PI_4).sin_cos();
    // Rotated 45° counter-clockwise about the page centre.
    s.push_transform(&Transform::from_row(
        cos,
        sin,
        -sin,
        cos,
        PAGE_W / 2.0,
        PAGE_H / 2.0,
    ));
    let mut x = -w / 2.0;
    for run in fonts.shape(text, st)? {
        let rw = run.width_em * size;
        draw(
            s,
            fonts,
            Op::Text {
                x,
                y: size / 3.0,
                size,
                run,
                gray: 217,
            },
        );
        x += rw;
    }
    s.pop();
    Ok(())
}

fn gray_fill(gray: u8) -> Fill {
    Fill {
        paint: luma::Color::new(gray).into(),
        opacity: NormalizedF32::ONE,
        rule: Default::default(),
    }
}

fn draw(s: &mut Surface<'_>, fonts: &Fonts, op: Op) {
    match op {
        Op::Text {
            x,
            y,
            size,
            run,
            gray,
        } => {
            let Some(face) = fonts.faces.get(run.face) else {
                return;
            };
            s.set_fill(Some(gray_fill(gray)));
            s.set_stroke(run.fake_bold.then(|| Stroke {
                paint: luma::Color::new(gray).into(),
                width: size * 0.03,
                ..Stroke::default()
            }));
            if run.fake_italic {
                // Slant about the baseline.
                s.push_transform(&Transform::from_row(1.0, 0.0, -0.2, 1.0, 0.2 * y, 0.0));
            }
            s.draw_glyphs(
                Point::from_xy(x, y),
                &run.glyphs,
                face.font.clone(),
                &run.text,
                size,
                false,
            );
            if run.fake_italic {
                s.pop();
            }
            s.set_stroke(None);
        }
        Op::Rect { x, y, w, h, gray } => {
            let Some(r) = Rect::from_xywh(x, y, w, h) else {
                return;
            };
            let mut pb = PathBuilder::new();
            pb.push_rect(r);
            if let Some(p) = pb.finish() {
                s.set_fill(Some(gray_fill(gray)));
                s.set_stroke(None);
                s.draw_path(&p);
            }
        }
        Op::Line { x1, x2, y } => {
            let mut pb = PathBuilder::new();
            pb.move_to(x1, y);
            pb.line_to(x2, y);
            if let Some(p) = pb.finish() {
                s.set_fill(None);
                s.set_stroke(Some(Stroke {
                    paint: luma::Color::new(160).into(),
                    width: 0.5,
                    ..Stroke::default()
                }));
                s.draw_path(&p);
                s.set_stroke(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc_generator::markdown::blocks;

    fn opts(dirs: Vec<PathBuf>) -> PdfOptions {
        PdfOptions {
            font_size: 12.0,
            font_dirs: Some(dirs),
            ..PdfOptions::default()
        }
    }

    #[test]
    fn cjk_text_without_a_cjk_font_names_the_package_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let e = render(&blocks("报告"), &opts(vec![dir.path().to_path_buf()])).unwrap_err();
        assert!(e.contains("'报' (U+62A5)"), "{e}");
        assert!(e.contains("apt-get install fonts-noto-cjk"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn no_font_at_all_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = render(&blocks("hello"), &opts(vec![dir.path().to_path_buf()])).unwrap_err();
        assert!(e.starts_with("no font found for PDF output"), "{e}");
    }

    #[test]
    fn a_font_named_by_canvas_pdf_font_is_used_alone() {
        // Any system font with Latin glyphs will do; skip where there is none.
        let found = scan(&FONT_DIRS.iter().map(PathBuf::from).collect::<Vec<_>>());
        let Some(path) = REGULAR.iter().find_map(|n| found.get(*n)) else {
            eprintln!("skipping: no system font");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(vec![dir.path().to_path_buf()]);
        o.font_file = Some(path.clone());
        let pdf = render(&blocks("Hello **there**"), &o).unwrap();
        let doc = lopdf::Document::load_mem(&pdf).unwrap();
        let text = doc.extract_text(&[1]).unwrap();
        let words: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(words, ["Hello", "there"]);
    }
}
