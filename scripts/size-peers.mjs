#!/usr/bin/env node
// What comparable script loaders cost a page beside ours: the anchors of `npm run bench`,
// pinned by version in bench/anchors.mjs (installed there into a cache folder of their own),
// measured by scripts/size.mjs's method, as one table (after `npm run build`).
import { measureAnchors } from '../bench/anchors.mjs';
import { sizeTable } from './size-docs.mjs';
import { measure } from './size.mjs';

console.log(sizeTable(await measure(), await measureAnchors()));
