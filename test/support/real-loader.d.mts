export declare const REAL_LOADER_PACKAGE: string;
export declare const REAL_LOADER_VERSION: string;
/** The source of the vendor's real loader 5.2.2, extracted from the installed devDependency. */
export declare function realLoaderSource(): string;
