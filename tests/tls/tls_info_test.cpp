// The tls_info parser: MemFabric's "key: value;" string of TLS file locations.
#include <gtest/gtest.h>

#include "memloom/error.h"
#include "src/store/tls_info.h"

namespace memloom::store {
namespace {

using Files = std::vector<std::string>;

TEST(TlsInfo, ParsesEveryKeyAndResolvesFileNamesInTheirDirectories) {
  TlsFiles files = parse_tls_info(
      "tlsCaPath: /etc/ca; tlsCaFile: a.pem,b.pem; tlsCert: /etc/node.pem; "
      "tlsCrlPath: /etc/crl/; tlsCrlFile: r.pem; packagePath: /usr/lib");
  EXPECT_EQ(files.ca_files, (Files{"/etc/ca/a.pem", "/etc/ca/b.pem"}));
  EXPECT_EQ(files.cert_file, "/etc/node.pem");
  EXPECT_EQ(files.crl_files, (Files{"/etc/crl/r.pem"}));
  EXPECT_EQ(files.package_path, "/usr/lib");
}

TEST(TlsInfo, OptionalKeysMayBeLeftOut) {
  TlsFiles files = parse_tls_info("tlsCaFile: /ca.pem; tlsCert: cert.pem");
  EXPECT_EQ(files.ca_files, (Files{"/ca.pem"}));
  EXPECT_EQ(files.cert_file, "cert.pem");
  EXPECT_TRUE(files.crl_files.empty());
  EXPECT_TRUE(files.package_path.empty());
}

TEST(TlsInfo, AbsoluteFileNamesIgnoreTheirDirectory) {
  TlsFiles files = parse_tls_info(
      "tlsCaPath: /ca; tlsCaFile: /elsewhere/ca.pem, local.pem; "
      "tlsCert: /c.pem");
  EXPECT_EQ(files.ca_files, (Files{"/elsewhere/ca.pem", "/ca/local.pem"}));
}

TEST(TlsInfo, WhitespaceAndEmptyPairsAreIgnored) {
  TlsFiles expected = parse_tls_info("tlsCaFile: /ca.pem; tlsCert: /c.pem");
  EXPECT_EQ(parse_tls_info("tlsCaFile:/ca.pem;tlsCert:/c.pem"), expected);
  EXPECT_EQ(parse_tls_info("  tlsCaFile :\t/ca.pem ;\n tlsCert :  /c.pem ;;  ; "), expected);
  EXPECT_EQ(parse_tls_info("tlsCaFile: /ca.pem ,  /ca2.pem; tlsCert: /c.pem").ca_files,
            (Files{"/ca.pem", "/ca2.pem"}));
  // Spaces inside a path are part of it.
  EXPECT_EQ(parse_tls_info("tlsCaFile: /my ca.pem; tlsCert: /c.pem").ca_files,
            (Files{"/my ca.pem"}));
}

void expect_refused(const std::string& text, const std::string& reason_part) {
  try {
    parse_tls_info(text);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput);
    EXPECT_NE(std::string(error.what()).find(reason_part), std::string::npos)
        << "'" << text << "' was refused with: " << error.what();
  }
}

TEST(TlsInfo, RefusesUnknownAndRepeatedKeys) {
  expect_refused("tlsCaFile: /ca.pem; tlsCert: /c.pem; tlsKey: /k.pem", "unknown key 'tlsKey'");
  expect_refused("tlscert: /c.pem; tlsCaFile: /ca.pem", "unknown key 'tlscert'");
  expect_refused("tlsCaFile: /ca.pem; tlsCert: /c.pem; tlsCert: /d.pem", "tlsCert is given twice");
}

TEST(TlsInfo, RefusesMissingRequiredKeys) {
  expect_refused("tlsCaFile: /ca.pem", "tlsCert");
  expect_refused("tlsCaPath: /ca; tlsCert: /c.pem", "tlsCaFile");
  expect_refused("", "tlsCert");
  expect_refused(" ; ;", "tlsCert");
  expect_refused("tlsCaFile: /ca.pem; tlsCert: /c.pem; tlsCrlPath: /crl", "tlsCrlFile");
}

TEST(TlsInfo, RefusesMalformedPairsAndEmptyValues) {
  expect_refused("tlsCaFile /ca.pem; tlsCert: /c.pem", "not a 'key: value' pair");
  expect_refused("tlsCaFile: ; tlsCert: /c.pem", "tlsCaFile has an empty value");
  expect_refused("tlsCaFile: /a.pem,,/b.pem; tlsCert: /c.pem", "tlsCaFile has an empty item");
  expect_refused("tlsCaFile: /a.pem, ; tlsCert: /c.pem", "tlsCaFile has an empty item");
}

TEST(TlsInfo, RefusesPathsWithSeparatorsOrControlCharacters) {
  expect_refused("tlsCaFile: /ca.pem; tlsCert: /a,b.pem", "contains ','");
  expect_refused("tlsCaFile: /ca.pem; tlsCert: /a:b.pem", "contains ':'");
  expect_refused("tlsCaPath: /x:y; tlsCaFile: ca.pem; tlsCert: /c.pem", "contains ':'");
  expect_refused("tlsCaFile: /ca.pem; tlsCert: /c.pem; packagePath: /a,b", "contains ','");
  expect_refused("tlsCaFile: /ca.pem; tlsCrlFile: /r:1.pem; tlsCert: /c.pem", "contains ':'");
  // ';' ends the pair, so what follows it is a pair of its own without a key.
  expect_refused("tlsCaFile: /ca.pem; tlsCert: /a;b.pem", "'b.pem' is not a 'key: value' pair");
  expect_refused(std::string("tlsCaFile: /ca.pem; tlsCert: /a\0b.pem", 37), "control character");
  expect_refused("tlsCaFile: /ca.pem; tlsCert: /a\nb.pem", "control character 0x0a");
}

}  // namespace
}  // namespace memloom::store
