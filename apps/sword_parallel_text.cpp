// Writes the English-Spanish parallel Bible that the seq2seq examples train on (docs/seq2seq.md):
// the King James Version (Debian's sword-text-kjv) and the Reina-Valera 1909 (sword-text-sparv),
// read through libsword, one verse pair per line:
//   OSIS-REF <TAB> English <TAB> Spanish        e.g. "Gen.1.1\tIn the beginning ...\tEn el principio ..."
//   sword_parallel_text --out FILE [--english MODULE] [--spanish MODULE] [--sword-path DIR]
// SWORD's own filters render each verse as plain text (no Strong's numbers, footnotes, headings or
// red-letter markup); whitespace runs, tabs and newlines included, become one space, and the
// pilcrows and Strong's numbers the renderer leaves are dropped (one_line). Verses are
// walked in the English module's versification (both modules use KJV's); a verse either module
// leaves empty is skipped. The library reads the file (datasets/parallel_text.h) and never links
// SWORD, which brings ICU: only this program does, and it is built only where meson finds sword.
#include <markupfiltmgr.h>
#include <swmgr.h>
#include <swmodule.h>
#include <versekey.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <tuple>

namespace {

const char* usage =
    "usage: sword_parallel_text --out FILE [options]\n"
    "Writes the verses two SWORD Bible modules share as 'REF<TAB>first<TAB>second' lines.\n"
    "  -o, --out FILE       where the text goes ('-': standard output)\n"
    "      --english NAME   first module (default engKJV2006eb, Debian's sword-text-kjv)\n"
    "      --spanish NAME   second module (default spaRV1909eb, Debian's sword-text-sparv)\n"
    "      --sword-path DIR the SWORD library holding mods.d/ (default: SWORD's own lookup,\n"
    "                       SWORD_PATH, ~/.sword, /etc/sword.conf: /usr/share/sword on Debian)\n";

// Whether TEXT at P starts a Strong's number SWORD left in ("<G5547>", "<H3967>"); its length, or 0.
size_t strongs_number_at(const char* p) {
  if (p[0] != '<' || (p[1] != 'G' && p[1] != 'H') || !std::isdigit(static_cast<unsigned char>(p[2]))) return 0;
  size_t n = 2;
  while (std::isdigit(static_cast<unsigned char>(p[n]))) ++n;
  return p[n] == '>' ? n + 1 : 0;
}

// TEXT as one field of one line: leading and trailing whitespace removed, every inner run of it
// one space, and two things the plain renderer leaves that are no words of the verse dropped:
// the KJV's paragraph marks (U+00B6) and Strong's numbers. SWORD 1.9's Strong's filter, switched
// off, removes only the first number of a word tagged with several (<w lemma="strong:G2424
// G5547">de Jesucristo</w> renders "de Jesucristo <G5547>"): 4362 of them in the RV 1909.
std::string one_line(const char* text) {
  std::string out;
  bool space = false;
  for (const char* p = text; *p;) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      space = !out.empty();
      ++p;
      continue;
    }
    if (c == 0xC2 && static_cast<unsigned char>(p[1]) == 0xB6) {  // the pilcrow, UTF-8
      p += 2;
      continue;
    }
    if (const size_t n = strongs_number_at(p)) {
      p += n;
      space = false;  // the space before it goes too: "Jesucristo <G5547>, hijo" is "Jesucristo, hijo"
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += static_cast<char>(c);
    ++p;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path, english = "engKJV2006eb", spanish = "spaRV1909eb", sword_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "sword_parallel_text: " << arg << " needs a value\n" << usage;
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "-o" || arg == "--out") out_path = value();
    else if (arg == "--english") english = value();
    else if (arg == "--spanish") spanish = value();
    else if (arg == "--sword-path") sword_path = value();
    else if (arg == "-h" || arg == "--help") {
      std::cout << usage;
      return 0;
    } else {
      std::cerr << "sword_parallel_text: unknown argument '" << arg << "'\n" << usage;
      return 2;
    }
  }
  if (out_path.empty()) {
    std::cerr << "sword_parallel_text: --out FILE is required\n" << usage;
    return 2;
  }

  // FMT_PLAIN: the module's OSIS markup goes through SWORD's plain-text render filter.
  // The manager owns the filter manager. Without a path, SWORD's own lookup finds the library.
  auto* filters = new sword::MarkupFilterMgr(sword::FMT_PLAIN);
  std::unique_ptr<sword::SWMgr> owner(sword_path.empty() ? new sword::SWMgr(filters)
                                                         : new sword::SWMgr(sword_path.c_str(), true, filters));
  sword::SWMgr& manager = *owner;
  // Notes, headings and word-level tags are markup for readers, not the verse's words.
  for (const char* option : {"Footnotes", "Cross-references", "Headings", "Strong's Numbers", "Morphological Tags",
                             "Lemmas", "Words of Christ in Red", "Glosses", "Morpheme Segmentation"})
    manager.setGlobalOption(option, "Off");

  sword::SWModule* first = manager.getModule(english.c_str());
  sword::SWModule* second = manager.getModule(spanish.c_str());
  for (auto [module, name, package] : {std::tuple{first, &english, "sword-text-kjv"},
                                       std::tuple{second, &spanish, "sword-text-sparv"}}) {
    if (!module) {
      std::cerr << "sword_parallel_text: no SWORD module '" << *name << "' in "
                << (sword_path.empty() ? "SWORD's library (/usr/share/sword on Debian)" : sword_path)
                << "; install Debian's package " << package << " (the default module's), or name an installed one\n";
      return 1;
    }
  }

  std::ofstream file;
  std::ostream* out = &std::cout;
  if (out_path != "-") {
    file.open(out_path, std::ios::binary);
    if (!file) {
      std::cerr << "sword_parallel_text: cannot write " << out_path << "\n";
      return 1;
    }
    out = &file;
  }

  std::unique_ptr<sword::VerseKey> key(static_cast<sword::VerseKey*>(first->createKey()));
  key->setIntros(false);  // book and chapter introductions are no verses
  long pairs = 0, skipped = 0;
  for (key->setPosition(sword::TOP); !key->popError(); key->increment()) {
    first->setKey(*key);
    second->setKey(*key);
    const std::string a = one_line(first->renderText().c_str());
    const std::string b = one_line(second->renderText().c_str());
    if (a.empty() || b.empty()) {
      ++skipped;
      continue;
    }
    *out << key->getOSISRef() << '\t' << a << '\t' << b << '\n';
    ++pairs;
  }
  out->flush();
  if (!*out) {
    std::cerr << "sword_parallel_text: writing " << out_path << " failed\n";
    return 1;
  }
  std::cerr << "sword_parallel_text: " << pairs << " verse pairs written, " << skipped
            << " verses skipped (empty in " << english << " or " << spanish << ")\n";
  return 0;
}
