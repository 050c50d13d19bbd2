/**
 * The Standard Schema v1 interface (https://standardschema.dev), copied as its authors intend so
 * that any conforming validator (zod, valibot, arktype…) can describe a tool's input.
 * @module
 */

/** A validator that follows the Standard Schema v1 interface; zod 4 schemas are one. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The Standard Schema properties. */
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

/** Types that belong to the Standard Schema v1 interface. */
export declare namespace StandardSchemaV1 {
  /** The properties every Standard Schema exposes under `~standard`. */
  export interface Props<Input = unknown, Output = Input> {
    /** The version of the interface. */
    readonly version: 1;
    /** The library that made the schema. */
    readonly vendor: string;
    /** Validates an unknown value. */
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    /** Inferred types, for type inference only. */
    readonly types?: Types<Input, Output> | undefined;
  }
  /** The result of validating a value. */
  export type Result<Output> = SuccessResult<Output> | FailureResult;
  /** A successful validation. */
  export interface SuccessResult<Output> {
    /** The parsed value. */
    readonly value: Output;
    /** Absent on success. */
    readonly issues?: undefined;
  }
  /** A failed validation. */
  export interface FailureResult {
    /** Every issue found. */
    readonly issues: ReadonlyArray<Issue>;
  }
  /** One validation issue. */
  export interface Issue {
    /** What is wrong. */
    readonly message: string;
    /** Where it is wrong. */
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }
  /** One segment of an issue's path. */
  export interface PathSegment {
    /** The key of the segment. */
    readonly key: PropertyKey;
  }
  /** The input and output types a schema infers. */
  export interface Types<Input = unknown, Output = Input> {
    /** The input type. */
    readonly input: Input;
    /** The output type. */
    readonly output: Output;
  }
  /** The input type a schema accepts. */
  export type InferInput<Schema extends StandardSchemaV1> = NonNullable<
    Schema['~standard']['types']
  >['input'];
  /** The output type a schema produces. */
  export type InferOutput<Schema extends StandardSchemaV1> = NonNullable<
    Schema['~standard']['types']
  >['output'];
}
