/** The receipt printer: PNG to ESC/POS raster, the driver, its transports and the emulator. */
export { PrinterError, type PrinterErrorCode } from './errors.js';
export {
  HEAD_WIDTHS,
  blankRaster,
  checkHeadWidth,
  dotAt,
  pngSize,
  pngToRaster,
  rasterToPng,
  rgbaToRaster,
  type Raster,
  type RasterOptions,
} from './png-raster.js';
export * from './escpos.js';
export { parseAll, parseCommand, type EscPosCommand, type ParseStep } from './escpos-parser.js';
export {
  ReceiptPrinter,
  type ConfirmMode,
  type PrintOptions,
  type PrintResult,
  type ReceiptPrinterOptions,
} from './printer.js';
export {
  RAW_PRINT_PORT,
  connectTcpPrinter,
  parseTcpAddress,
  type TcpPrinterOptions,
} from './tcp.js';
export {
  EmulatedPrinter,
  type EmulatedFault,
  type EmulatedPrinterOptions,
  type PrintedJob,
} from './emulated-printer.js';
export {
  startEmulatedNetworkPrinter,
  type EmulatedNetworkPrinter,
  type EmulatedNetworkPrinterOptions,
} from './emulated-network-printer.js';
