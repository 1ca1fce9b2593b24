// The globals of the classic script onnxtrain.js, for a TypeScript program that is not a module (no import or
// export): `onnxtrain`, and `ort`, the same object where no onnxruntime-web defined it first. Include this file in
// the program (tsconfig "files", or `/// <reference path="node_modules/onnxtrain/onnxtrain-global.d.ts" />`).
/// <reference path="./onnxtrain.d.ts" />

/** The classic script's `ort`: onnxtrain itself, unless onnxruntime-web's script defined `ort` before it. */
declare var ort: typeof onnxtrain;
