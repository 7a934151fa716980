import { AppError, defineMessages } from '@app/platform';

/** The identity service's errors: stable codes, statuses and localized messages. */
export const identityNotFound = (id: string) => new AppError('IDENTITY_NOT_FOUND', 404, 'identity.notFound', { id });
export const identityEmailNotFound = () => new AppError('IDENTITY_NOT_FOUND', 404, 'identity.emailNotFound');
export const emailTaken = (email: string) => new AppError('IDENTITY_EMAIL_TAKEN', 422, 'identity.emailTaken', { email });
export const privilegedFieldsForbidden = () => new AppError('IDENTITY_PRIVILEGED_FIELDS', 403, 'identity.privilegedFields');

defineMessages({
  en: {
    'identity.notFound': 'No identity has id {id}.',
    'identity.emailNotFound': 'No identity has this email.',
    'identity.emailTaken': 'The email {email} is already used by another identity.',
    'identity.privilegedFields': 'Only an admin or a system token may set roles or activation.',
  },
  'pt-BR': {
    'identity.notFound': 'Nenhuma identidade tem o id {id}.',
    'identity.emailNotFound': 'Nenhuma identidade tem este e-mail.',
    'identity.emailTaken': 'O e-mail {email} já é usado por outra identidade.',
    'identity.privilegedFields': 'Somente um administrador ou um token de sistema pode definir papéis ou ativação.',
  },
  es: {
    'identity.notFound': 'Ninguna identidad tiene el id {id}.',
    'identity.emailNotFound': 'Ninguna identidad tiene este correo electrónico.',
    'identity.emailTaken': 'El correo electrónico {email} ya lo usa otra identidad.',
    'identity.privilegedFields': 'Solo un administrador o un token de sistema puede establecer roles o la activación.',
  },
  fr: {
    'identity.notFound': "Aucune identité n'a l'id {id}.",
    'identity.emailNotFound': "Aucune identité n'a cette adresse e-mail.",
    'identity.emailTaken': "L'adresse e-mail {email} est déjà utilisée par une autre identité.",
    'identity.privilegedFields': "Seul un administrateur ou un jeton système peut définir les rôles ou l'activation.",
  },
  de: {
    'identity.notFound': 'Keine Identität hat die ID {id}.',
    'identity.emailNotFound': 'Keine Identität hat diese E-Mail-Adresse.',
    'identity.emailTaken': 'Die E-Mail-Adresse {email} wird bereits von einer anderen Identität verwendet.',
    'identity.privilegedFields': 'Nur ein Admin oder ein System-Token darf Rollen oder die Aktivierung setzen.',
  },
});
