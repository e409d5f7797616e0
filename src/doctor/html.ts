/**
 * What the doctor reads of a page's HTML, with a real tokenizer (htmlparser2): one pass,
 * linear in the page's size whatever it holds (regular expressions over unclosed tags were
 * quadratic: 400 KB of `<script ` took 18 s of CPU).
 */
import { Parser } from 'htmlparser2';

export interface PageMarkup {
  /** The attributes of each `<script>` element, names in lower case. */
  scripts: Array<Record<string, string>>;
  /** The attributes of each `<blackbox-capture>` element. */
  elements: Array<Record<string, string>>;
  /** The `content` of each `<meta http-equiv="Content-Security-Policy">`. */
  metaPolicies: string[];
}

export function readMarkup(html: string): PageMarkup {
  const markup: PageMarkup = { scripts: [], elements: [], metaPolicies: [] };
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (name === 'script') markup.scripts.push(attributes);
        else if (name === 'blackbox-capture') markup.elements.push(attributes);
        else if (
          name === 'meta' &&
          attributes['http-equiv']?.toLowerCase() === 'content-security-policy' &&
          attributes.content !== undefined
        ) {
          markup.metaPolicies.push(attributes.content);
        }
      },
    },
    { lowerCaseTags: true, lowerCaseAttributeNames: true, decodeEntities: true },
  );
  parser.end(html);
  return markup;
}
