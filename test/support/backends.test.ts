/**
 * The back ends' harness (test/support/backends.ts): its count of a file's own lines, which
 * holds each back end to 40, and its rule for a missing toolchain (skipped and named; with
 * CI set, an error).
 */
import { describe, expect, it } from 'vitest';
import { availableBackends, BACKENDS, codeLines, sourceOf } from './backends.js';

describe('the back ends harness', () => {
  it('counts the lines of code, not blank lines, comments or imports', () => {
    const go = ['// a comment', 'package main', '', 'import (', '\t"fmt"', '\t"os"', ')', 'func main() {', '}'];
    expect(codeLines(go.join('\n'))).toBe(3);
    const python = ['# a comment', 'import os, json', 'from http.server import BaseHTTPRequestHandler', 'x = 1'];
    expect(codeLines(python.join('\n'))).toBe(1);
    const ruby = ["require 'json'", '  # indented comment', 'puts 1', 'end'];
    expect(codeLines(ruby.join('\n'))).toBe(2);
    const java = ['import java.util.*;', 'public class Shop {', '  // why', '}'];
    expect(codeLines(java.join('\n'))).toBe(2);
  });

  it('counts every line of a back end that is code: a longer file is seen', () => {
    for (const backend of BACKENDS) {
      const source = sourceOf(backend);
      expect(codeLines(source + 'one();\n'.repeat(5)), backend.name).toBe(codeLines(source) + 5);
    }
  });

  it('names a missing toolchain, and with CI set refuses to skip it', () => {
    const path = { PATH: '/nonexistent' };
    const saved = process.env.PATH;
    process.env.PATH = path.PATH;
    try {
      const { present, missing } = availableBackends({});
      expect(present).toEqual([]);
      expect(missing).toEqual(BACKENDS.map((backend) => `${backend.name} (${backend.apt})`));
      expect(() => availableBackends({ CI: 'true' })).toThrow(/CI is set and a back end's toolchain is missing: php/);
    } finally {
      process.env.PATH = saved;
    }
  });
});
